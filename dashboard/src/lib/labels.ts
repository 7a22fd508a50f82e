// The Labelling page's arithmetic: which topic buttons a candidate gets and
// in what order, what the classifier said in words, and the quality panel's
// tables (the confusion matrix, per-week accuracy) from GET /labels/stats.
import type { LabelCandidate, LabelReason, LabelStats } from '@/types/classifier'
import { formatPercent } from './format'

/** The predicted column of a document the classifier gave no topic (the classifier's labels.NoTopic). */
export const NO_TOPIC = 'none'

export const REASON_TEXT: Record<LabelReason, string> = {
  no_topic: 'No topic',
  low_confidence: 'Low confidence',
  disputed: 'Rules disagree with the model',
}

/** Why a candidate is offered, in words (an unknown reason as it came). */
export function reasonText(reason: string): string {
  return REASON_TEXT[reason as LabelReason] ?? reason
}

/** What the classifier said: "sports, 42%" or "no topic". */
export function predictedText(topic: string, confidence: number): string {
  return topic ? `${topic}, ${formatPercent(confidence)}` : 'no topic'
}

/**
 * The topics a candidate can be labelled with, the classifier's suggestion
 * first: its primary topic, then its other topics, then every other topic
 * available in order. A suggestion not among the available topics is still
 * offered (the operator may agree with it).
 */
export function topicChoices(c: Pick<LabelCandidate, 'primary_topic' | 'topics'>, available: string[]): string[] {
  const out: string[] = []
  for (const t of [c.primary_topic, ...(c.topics ?? []), ...available]) {
    if (t && !out.includes(t)) out.push(t)
  }
  return out
}

/** The confusion matrix as a table: rows are labels, columns predicted topics ("none" last). */
export interface ConfusionTable {
  labels: string[]
  predicted: string[]
  /** cells[i][j]: documents labelled labels[i] the classifier had decided predicted[j]. */
  cells: number[][]
  rowTotals: number[]
}

export function confusionTable(confusion: LabelStats['confusion'] | undefined): ConfusionTable {
  const c = confusion ?? {}
  const labels = Object.keys(c).sort()
  const cols = new Set<string>()
  for (const row of Object.values(c)) for (const p of Object.keys(row)) cols.add(p)
  // The labels themselves are columns too, so the diagonal lines up.
  for (const l of labels) cols.add(l)
  const predicted = [...cols].filter((p) => p !== NO_TOPIC).sort()
  if (cols.has(NO_TOPIC)) predicted.push(NO_TOPIC)
  const cells = labels.map((l) => predicted.map((p) => c[l]?.[p] ?? 0))
  return { labels, predicted, cells, rowTotals: cells.map((r) => r.reduce((a, b) => a + b, 0)) }
}

/** A week's accuracy: the share of its labels the classifier had right (null without labels). */
export function weekAccuracy(w: { labelled: number; correct: number }): number | null {
  return w.labelled > 0 ? w.correct / w.labelled : null
}

/** The overall share of labels the classifier had right. */
export function overallAccuracy(stats: LabelStats | undefined): number | null {
  if (!stats) return null
  const labelled = stats.weeks.reduce((a, w) => a + w.labelled, 0)
  const correct = stats.weeks.reduce((a, w) => a + w.correct, 0)
  return weekAccuracy({ labelled, correct })
}

/** Per label counts, largest first, then by name. */
export function perLabelRows(perLabel: Record<string, number> | undefined): { label: string; count: number }[] {
  return Object.entries(perLabel ?? {})
    .map(([label, count]) => ({ label, count }))
    .sort((a, b) => b.count - a.count || a.label.localeCompare(b.label))
}

/**
 * Whether the labels are enough to train on, as the classifier decides it:
 * at least two topics, each with at least two labels. Returns the reason
 * when not (the classifier answers 400 then).
 */
export function trainingShortfall(perLabel: Record<string, number> | undefined): string | null {
  const rows = perLabelRows(perLabel)
  if (rows.length < 2) return 'Training needs labels of at least two topics.'
  const few = rows.filter((r) => r.count < 2).map((r) => r.label)
  if (few.length) return `Training needs at least two labels per topic (${few.join(', ')} ${few.length === 1 ? 'has' : 'have'} one).`
  return null
}

/** A default name for a model trained from the labels now: labels-2026-11-28-1000. */
export function defaultModelName(now: Date = new Date()): string {
  return `labels-${now.toISOString().slice(0, 16).replace('T', '-').replace(':', '')}`
}
