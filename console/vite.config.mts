import { defineConfig } from 'vite';

/** Built into dist/, served by the API under /console (src/http/routes/console/). */
export default defineConfig({
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Nothing inlined as data: URIs, and no preload helper: one script file, one style file.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
