// The dashboard's service clients, wired to the session: every call
// carries the operator's access token, refreshed first when it is about to
// expire; a 401 is retried once with a refreshed token, and a 401 that a
// refresh cannot cure ends the session, which sends the operator to the
// login page.
import { session } from '@/auth/session'
import { classifierClient } from './classifier'
import { indexManagerClient } from './indexManager'
import { publisherClient } from './publisher'
import { prometheusClient } from './prometheus'
import { dashboardClient } from './dashboard'
import { ALL_ON, parseFeatures, type FeatureFlags } from '@/lib/features'

const common = {
  getToken: () => session.freshToken(),
  refresh: (refused: string) => session.refresh(refused),
  onUnauthorized: () => session.end('expired'),
}

export const indexManagerApi = indexManagerClient(common)
export const classifierApi = classifierClient(common)
export const publisherApi = publisherClient(common)
export const prometheusApi = prometheusClient(common)
export const dashboardApi = dashboardClient(common)

export { ApiError } from './http'

/** Fetches the runtime configuration the dashboard server serves. */
export interface RuntimeConfig {
  read_only: boolean
  /** The server proxies a Prometheus (the Overview's charts history). */
  prometheus?: boolean
}

export async function fetchRuntimeConfig(fetchImpl: typeof fetch = fetch): Promise<RuntimeConfig> {
  try {
    const res = await fetchImpl('/config.json', { headers: { Accept: 'application/json' } })
    if (!res.ok) return { read_only: false }
    const body = (await res.json()) as Partial<RuntimeConfig>
    return { read_only: body.read_only === true, ...(body.prometheus === true ? { prometheus: true } : {}) }
  } catch {
    return { read_only: false }
  }
}

/**
 * Fetches the feature flags the dashboard server serves (GET /api/features,
 * no token needed). A server that does not answer them has every feature on:
 * the server refuses a disabled feature's routes itself anyway.
 */
export async function fetchFeatures(fetchImpl: typeof fetch = fetch): Promise<FeatureFlags> {
  try {
    const res = await fetchImpl('/api/features', { headers: { Accept: 'application/json' } })
    if (!res.ok) return { ...ALL_ON }
    return parseFeatures(await res.json())
  } catch {
    return { ...ALL_ON }
  }
}
