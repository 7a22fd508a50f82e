/// <reference types="vitest/config" />
import { fileURLToPath, URL } from 'node:url'
import { defineConfig, type Plugin, type ProxyOptions } from 'vite'
import vue from '@vitejs/plugin-vue'
import tailwindcss from '@tailwindcss/vite'

// The browser talks to one origin. In development Vite proxies each
// service's prefix to it, as the production server (dashboard/server) does.
const upstreams: Record<string, string> = {
  '/api/classifier': process.env.CLASSIFIER_URL ?? 'http://127.0.0.1:8071',
  '/api/publisher': process.env.PUBLISHER_URL ?? 'http://127.0.0.1:8070',
  '/api/index-manager': process.env.INDEX_MANAGER_URL ?? 'http://127.0.0.1:8090',
}

const proxy: Record<string, ProxyOptions> = {}
for (const [prefix, target] of Object.entries(upstreams)) {
  proxy[prefix] = {
    target,
    changeOrigin: true,
    rewrite: (path) => path.slice(prefix.length) || '/',
  }
}

// /config.json is the runtime configuration the production server serves
// from its environment; the dev server answers it the same way.
function runtimeConfig(): Plugin {
  return {
    name: 'north-cloud-runtime-config',
    configureServer(server) {
      server.middlewares.use('/config.json', (_req, res) => {
        const readOnly = ['1', 'true', 'yes'].includes((process.env.DASHBOARD_READ_ONLY ?? '').toLowerCase())
        res.setHeader('Content-Type', 'application/json')
        res.setHeader('Cache-Control', 'no-store')
        res.end(JSON.stringify({ read_only: readOnly }))
      })
    },
  }
}

export default defineConfig({
  plugins: [vue(), tailwindcss(), runtimeConfig()],
  resolve: {
    alias: { '@': fileURLToPath(new URL('./src', import.meta.url)) },
  },
  server: { port: 3000, strictPort: true, proxy },
  preview: { port: 3000, proxy },
  build: {
    chunkSizeWarningLimit: 900,
  },
  test: {
    environment: 'jsdom',
    include: ['tests/**/*.test.ts'],
    reporters: ['default', './tests/summary-reporter.ts'],
    restoreMocks: true,
    // A bound for a test that hangs, not a timing: the first import of a
    // component (its transform) took over vitest's 5 s default on a loaded
    // two-core CI machine. Tests wait for their events, never a clock.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
})
