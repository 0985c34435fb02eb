import type { ServletRecord } from '../../store/servlets';

/** A search result exactly as the compatibility notes show it (the Python client builds ServletSearchResult). */
export function presentServletSearchResult(servlet: ServletRecord, installationCount: number) {
  return {
    slug: `${servlet.owner}/${servlet.name}`,
    meta: { description: servlet.description, schema: { tools: servlet.schema.tools } },
    installation_count: installationCount,
    visibility: servlet.visibility,
    created_at: servlet.created_at.toISOString(),
    modified_at: servlet.modified_at.toISOString(),
  };
}

/** One servlet as its reads, lists and publish answer: the search shape plus its name and content address. */
export function presentServlet(servlet: ServletRecord, installationCount: number) {
  return {
    ...presentServletSearchResult(servlet, installationCount),
    name: servlet.name,
    content_address: servlet.content_address,
  };
}
