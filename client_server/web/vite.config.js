import { defineConfig } from 'vite';

// `npm run dev` serves the sources with hot reload and forwards /ws and /api to a running
// Python server (VIEWER_SERVER, default http://127.0.0.1:8000).
const server = process.env.VIEWER_SERVER || 'http://127.0.0.1:8000';

// The Python server answers only its own page (Host and Origin checks, client_server/guard.py).
// Requests that come from this dev page are forwarded as if from the server's own page; any
// other Origin is passed on unchanged, so the server still refuses foreign pages.
const devOrigins = (port) => [`http://localhost:${port}`, `http://127.0.0.1:${port}`, `http://[::1]:${port}`];
function asServerOrigin(proxy, options) {
  const rewrite = (proxyReq, req) => {
    const port = req.socket.localPort;
    if (devOrigins(port).includes(req.headers.origin)) proxyReq.setHeader('origin', server);
  };
  proxy.on('proxyReq', rewrite);
  proxy.on('proxyReqWs', rewrite);
}

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
      '/ws': { target: server.replace(/^http/, 'ws'), ws: true, changeOrigin: true, configure: asServerOrigin },
      '/api': { target: server, changeOrigin: true, configure: asServerOrigin },
    },
  },
});
