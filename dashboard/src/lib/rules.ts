import type { Rule, RuleEffect, RuleInput, RuleThreshold } from '@/types/classifier'

/**
 * The threshold that decides a rule: the service's answer (threshold, under
 * the live engine's scoring), else what its fields say (min_keywords above
 * zero decides it, rules.Rule.Threshold under the default scoring).
 */
export function ruleThreshold(r: Pick<Rule, 'min_keywords' | 'min_confidence' | 'threshold'>): RuleThreshold {
  return r.threshold ?? ((r.min_keywords ?? 0) > 0 ? 'min_keywords' : 'min_confidence')
}

/** The deciding threshold in words, as the playground's explanations name it. */
export function thresholdText(r: Pick<Rule, 'min_keywords' | 'min_confidence' | 'threshold'>): string {
  return ruleThreshold(r) === 'min_keywords' ? `min_keywords ${r.min_keywords}` : `min_confidence ${r.min_confidence.toFixed(2)}`
}

/** The classifier's rule checks, as messages for the form (the service checks again). */
export function validateRuleInput(r: RuleInput): string[] {
  const out: string[] = []
  if (!r.name) out.push('Name is required')
  else if (r.name.length > 100) out.push('Name must be at most 100 characters')
  if (!r.topic) out.push('Topic is required')
  else if (!/^[a-z][a-z0-9_]*$/.test(r.topic)) out.push('Topic must be snake_case: a lowercase letter, then letters, digits or _')
  if (r.keywords.length === 0) out.push('Add at least one keyword')
  if (r.keywords.length > 500) out.push('At most 500 keywords')
  const mc = r.min_confidence ?? 0.3
  if (!Number.isFinite(mc) || mc < 0 || mc > 1) out.push('Min confidence must be between 0 and 1')
  const mk = r.min_keywords ?? 0
  if (!Number.isInteger(mk) || mk < 0) out.push('Distinct keywords needed must be a whole number, 1 or more')
  else if (mk > r.keywords.length && r.keywords.length > 0) out.push(`Distinct keywords needed must be at most the number of keywords (${r.keywords.length})`)
  const p = r.priority ?? 0
  if (!Number.isInteger(p) || p < -1000 || p > 1000) out.push('Priority must be a whole number from -1000 to 1000')
  if (r.effect !== undefined && !ruleEffects.some((e) => e.value === r.effect)) out.push('Effect must be support, exclude or override')
  else if (r.topic === 'crime' && r.effect !== 'exclude') out.push('The topic crime (every crime subcategory) is for exclude rules only; name a crime subcategory otherwise')
  return out
}

/** The effects a rule can have, the default first, with a one-line help each (rules.Effect). */
export const ruleEffects: { value: RuleEffect; label: string; help: string }[] = [
  { value: 'support', label: 'Support', help: 'Its keywords count as evidence for the topic (the default).' },
  { value: 'exclude', label: 'Exclude', help: 'When it matches, the topic is vetoed for the document; the topic crime vetoes every crime subcategory.' },
  { value: 'override', label: 'Override', help: 'When it matches, the topic is kept and made primary whatever the model says; an exclude rule still wins.' },
]

/** A rule's effect; an older service that does not send one has support rules only. */
export function ruleEffect(r: { effect?: RuleEffect }): RuleEffect {
  return r.effect ?? 'support'
}

/** Rule topics for the filter, each once, sorted. */
export function topicsOf(rules: Rule[]): string[] {
  return [...new Set(rules.map((r) => r.topic))].sort()
}
