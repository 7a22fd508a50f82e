/**
 * Adds keywords typed or pasted into the chips input: split on commas and
 * new lines, trimmed, lowercased for comparison, without duplicates (case
 * insensitive) and without empty entries. Returns the new list.
 */
export function addKeywords(existing: string[], input: string): string[] {
  const seen = new Set(existing.map((k) => k.toLowerCase()))
  const out = [...existing]
  for (const part of input.split(/[,\n]/)) {
    const k = part.trim().replace(/\s+/g, ' ')
    if (!k || seen.has(k.toLowerCase())) continue
    seen.add(k.toLowerCase())
    out.push(k)
  }
  return out
}

export function removeKeyword(existing: string[], index: number): string[] {
  return existing.filter((_, i) => i !== index)
}
