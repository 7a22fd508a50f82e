/**
 * The index-manager's naming rule, checked before sending so the form can
 * say what is wrong: a lowercase source, then _raw_content or
 * _classified_content. The service checks again; this only helps typing.
 */
export function validateIndexName(raw: string): string | null {
  const name = raw.trim()
  if (!name) return 'Index name is required'
  if (name.startsWith('.') || name.startsWith('_')) return 'System and underscore-prefixed indices cannot be managed'
  if (name !== name.toLowerCase()) return 'Index name must be lowercase'
  const m = /^(.+)_(raw|classified)_content$/.exec(name)
  if (!m) return 'Index name must end in _raw_content or _classified_content'
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(m[1]!)) return 'The source part may hold lowercase letters, digits, _ and -'
  return null
}

/** The index type a name implies, as the service derives it. */
export function indexTypeOf(name: string): 'raw_content' | 'classified_content' | 'other' {
  if (name.endsWith('_raw_content')) return 'raw_content'
  if (name.endsWith('_classified_content')) return 'classified_content'
  return 'other'
}

/**
 * The index-manager's alias rule (ValidateAliasName): 1 to 200 lowercase
 * letters, digits, _ and -, starting with a letter or digit, and not ending
 * in a content suffix (the pipeline reads every index and alias of those
 * patterns, so it would read the index twice). null when valid.
 */
export function validateAliasName(raw: string): string | null {
  const alias = raw.trim()
  if (!alias) return 'Alias name is required'
  if (!/^[a-z0-9][a-z0-9_-]{0,199}$/.test(alias)) return 'An alias is 1 to 200 lowercase letters, digits, _ and -, starting with a letter or digit'
  if (alias.endsWith('_raw_content') || alias.endsWith('_classified_content')) {
    return 'An alias may not end in _raw_content or _classified_content: the pipeline reads every index and alias of those patterns, so it would read the index twice'
  }
  return null
}
