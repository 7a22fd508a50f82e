// A small reader of the Prometheus text format, enough to pick gauges such
// as classifier_queue_depth and classifier_dlq_depth{source} off /metrics.

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    const m = LINE.exec(line)
    if (!m) continue
    const labels: Record<string, string> = {}
    if (m[3]) {
      for (const l of m[3].matchAll(LABEL)) {
        labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\')
      }
    }
    const value = Number(m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : m[4])
    out.push({ name: m[1]!, labels, value })
  }
  return out
}

/** Sum of every sample of a metric (over all label sets); null when absent. */
export function sumMetric(samples: Sample[], name: string): number | null {
  let found = false
  let total = 0
  for (const s of samples) {
    if (s.name === name && Number.isFinite(s.value)) {
      found = true
      total += s.value
    }
  }
  return found ? total : null
}
