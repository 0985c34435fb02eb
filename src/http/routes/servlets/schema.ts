import { z } from 'zod';
import { nameSchema } from '../../../store/names';
import { VISIBILITIES } from '../../../store/servlets';

export const SERVLET_DESCRIPTION_MAX_LENGTH = 1000;
/** Longer search text matches nothing useful and only costs a longer scan. */
export const SEARCH_TEXT_MAX_LENGTH = 200;

export const servletParams = z.object({ servlet: nameSchema });

const description = z.string().max(SERVLET_DESCRIPTION_MAX_LENGTH);
const visibility = z.enum(VISIBILITIES);

/** `PUT /api/servlets/~/<servlet>?description=&visibility=` with the module's bytes as the body. */
export const publishQuery = z.object({ description: description.optional(), visibility: visibility.optional() });

/** The same as JSON: the module in base64 (standard alphabet, padding optional). Unknown fields are ignored. */
export const publishJsonBody = z.object({
  module: z.string().min(1, 'expected the module in base64'),
  description: description.optional(),
  visibility: visibility.optional(),
});
export type PublishJsonBody = z.infer<typeof publishJsonBody>;

export const searchQuery = z.object({ q: z.string().max(SEARCH_TEXT_MAX_LENGTH).default('') });
