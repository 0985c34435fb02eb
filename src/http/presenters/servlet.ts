import { z } from 'zod';
import { VISIBILITIES, type ServletRecord } from '../../store/servlets';
import { timestamp } from './timestamp';

const tools = z.array(z.object({ name: z.string(), description: z.string(), inputSchema: z.record(z.string(), z.unknown()) }));
/** What a servlet's `describe` gave, as searches, reads and installs show it. */
export const servletMeta = z.object({ description: z.string(), schema: z.object({ tools }) });

/** A search result (the OpenAPI document's `ServletSearchResult`). */
export const servletSearchResult = z
  .object({ slug: z.string(), meta: servletMeta, installation_count: z.number().int().nonnegative(), visibility: z.enum(VISIBILITIES), created_at: timestamp, modified_at: timestamp })
  .meta({ id: 'ServletSearchResult' });
export type ServletSearchResult = z.infer<typeof servletSearchResult>;

/** One servlet (the OpenAPI document's `Servlet`). */
export const servletView = servletSearchResult.extend({ name: z.string(), content_address: z.string().regex(/^[0-9a-f]{64}$/) }).meta({ id: 'Servlet' });
export type ServletView = z.infer<typeof servletView>;

/** A search result exactly as the compatibility notes show it (the Python client builds ServletSearchResult). */
export function presentServletSearchResult(servlet: ServletRecord, installationCount: number): ServletSearchResult {
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
export function presentServlet(servlet: ServletRecord, installationCount: number): ServletView {
  return {
    ...presentServletSearchResult(servlet, installationCount),
    name: servlet.name,
    content_address: servlet.content_address,
  };
}
