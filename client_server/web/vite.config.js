import { defineConfig } from 'vite';

// `npm run dev` serves the sources with hot reload and forwards /ws and /api to a running
// Python server (VIEWER_SERVER, default http://127.0.0.1:8000).
const server = process.env.VIEWER_SERVER || 'http://127.0.0.1:8000';

// Assets are referenced relative to index.html so the server can mount dist/ anywhere.
export default defineConfig({
  base: './',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1024,
  },
  server: {
    proxy: {
      '/ws': { target: server.replace(/^http/, 'ws'), ws: true },
      '/api': server,
    },
  },
});
