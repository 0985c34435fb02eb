/**
 * The docs page (`GET /docs`): Swagger UI from the installed `swagger-ui-dist` package, served by this API under
 * `/docs/assets/`, reading `/api/openapi.json`. Nothing is fetched from anywhere else: no CDN, no validator badge.
 */

export const OPENAPI_PATH = '/api/openapi.json';
export const DOCS_PATH = '/docs';
export const ASSETS_PATH = `${DOCS_PATH}/assets`;
/** The web console (docs/users-profiles-tasks.md, "Where to start"). */
export const CONSOLE_PATH = '/console';

/** `GET /`: where a person or a client goes from the bare origin. */
export const ROOT_LINKS = { docs: DOCS_PATH, console: CONSOLE_PATH, openapi: OPENAPI_PATH, health: '/healthz' } as const;

/** The package files the page uses, by name, with their content types. */
export const PACKAGE_ASSETS = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
} as const;

/** Ours: starts Swagger UI. A file, not an inline script, so the page's CSP can forbid inline scripts. */
export const INIT_ASSET = 'init.js';
export const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(OPENAPI_PATH)},
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    withCredentials: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

export const ASSET_NAMES: [string, ...string[]] = [INIT_ASSET, ...Object.keys(PACKAGE_ASSETS)];

/** Same origin only; Swagger UI sets inline styles and uses data: images. */
export const DOCS_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

export const DOCS_HTML = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>Prompt task runner API</title>
    <link rel="stylesheet" type="text/css" href="${ASSETS_PATH}/swagger-ui.css">
    <link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${ASSETS_PATH}/swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="${ASSETS_PATH}/${INIT_ASSET}" charset="UTF-8"></script>
  </body>
</html>
`;
