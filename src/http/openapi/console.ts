import { z } from 'zod';
import { errors } from './common';
import type { Operation } from './operation';

const tags = ['docs'];
const page = { description: 'The console’s page (`index.html`): the app finds its own page from the path', type: 'text/html', schema: z.string() };
const notBuilt = { description: 'The console is not built: a text saying to run `npm run build:console`', type: 'text/plain', schema: z.string() };

/** The web console (src/http/routes/console/): a page and its files, no session (the app signs in through the API). */
export function consoleOperations(): Operation[] {
  return [
    { method: 'get', path: '/console', summary: 'The web console', tags, session: false, responses: { 200: page, 503: notBuilt } },
    {
      method: 'get',
      path: '/console/assets/{file}',
      summary: 'A file of the console, named by its content’s hash (cached for good)',
      tags,
      session: false,
      params: { path: z.object({ file: z.string() }) },
      responses: { 200: { description: 'The file' }, ...errors({ 404: 'No such file in the build' }), 503: notBuilt },
    },
    {
      method: 'get',
      path: '/console/{path}',
      summary: 'A page of the console (the same `index.html`)',
      tags,
      session: false,
      params: { path: z.object({ path: z.string() }) },
      responses: { 200: page, 503: notBuilt },
    },
  ];
}
