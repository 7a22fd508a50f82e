// The dashboard's feature flags, served by the dashboard server at
// GET /api/features from DASHBOARD_FEATURES (docs/configuration.md). A
// disabled feature's navigation entry and buttons are hidden and its page
// says so; the server refuses its routes with 403 feature_disabled. rules
// and index_manager are whole views: their routes carry meta.feature, and
// the app shell shows the notice instead of mounting the view at all.

export const FEATURES = ['live_tail', 'reprocess', 'query_explorer', 'exports', 'rules_edit', 'labelling', 'rules', 'index_manager'] as const
export type Feature = (typeof FEATURES)[number]
export type FeatureFlags = Record<Feature, boolean>

/** Every feature on: the default, and what an older server that serves no flags means. */
export const ALL_ON: FeatureFlags = Object.fromEntries(FEATURES.map((f) => [f, true])) as FeatureFlags

/** What each feature is called on the page that says it is off. */
export const FEATURE_LABELS: Record<Feature, string> = {
  live_tail: 'The live tail',
  reprocess: 'Reprocessing',
  query_explorer: 'The Query Explorer',
  exports: 'Exports',
  rules_edit: 'Editing rules',
  labelling: 'Labelling',
  rules: 'The Rules view',
  index_manager: 'The Index Manager view',
}

/** Reads GET /api/features' body; a flag it does not name stays on. */
export function parseFeatures(body: unknown): FeatureFlags {
  const flags: FeatureFlags = { ...ALL_ON }
  const features = (body as { features?: Record<string, unknown> } | null)?.features
  if (features && typeof features === 'object') {
    for (const f of FEATURES) if (features[f] === false) flags[f] = false
  }
  return flags
}

/** The sentence a disabled feature's page and refusals show. */
export function featureOffMessage(f: Feature): string {
  return `${FEATURE_LABELS[f]} is turned off by DASHBOARD_FEATURES (${f}=off).`
}

/** The feature a route's meta names (meta.feature), if it is a known one. */
export function routeFeature(meta: Record<string | number | symbol, unknown> | undefined): Feature | undefined {
  const f = meta?.feature
  return typeof f === 'string' && (FEATURES as readonly string[]).includes(f) ? (f as Feature) : undefined
}

/** Keeps the navigation entries whose feature (if any) is on. */
export function visibleNav<T extends { feature?: Feature }>(items: T[], flags: FeatureFlags | undefined): T[] {
  return items.filter((i) => !i.feature || (flags !== undefined && flags[i.feature]))
}
