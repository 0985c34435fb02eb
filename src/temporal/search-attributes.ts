import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Searchable in the Web UI and with `temporal workflow list --query 'Owner="ann"'`. Registered by the dev stack. */
export const OWNER = defineSearchAttributeKey('Owner', SearchAttributeType.KEYWORD);
export const PROFILE = defineSearchAttributeKey('Profile', SearchAttributeType.KEYWORD);
export const TASK = defineSearchAttributeKey('Task', SearchAttributeType.KEYWORD);
export const RUNNER = defineSearchAttributeKey('Runner', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [OWNER, PROFILE, TASK, RUNNER];

/** `--search-attribute Name=Keyword` flags for `temporal server start-dev`. */
export const searchAttributeFlags = () => SEARCH_ATTRIBUTES.flatMap((k) => ['--search-attribute', `${k.name}=Keyword`]);
