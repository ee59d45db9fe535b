import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

// The API process serves the built files at /dashboard (falling back to index.html for client-side routes),
// so the build goes into the server's dist/ and every URL is prefixed with that base.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  plugins: [preact()],
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    // Files rather than data: URIs, so everything stays within the Content-Security-Policy's 'self'.
    assetsInlineLimit: 0,
  },
  server: {
    // `npx vite --config dashboard/vite.config.ts` next to a running API (port 3000) for development.
    proxy: { '/v1': 'http://localhost:3000' },
  },
});
