import { describe, expect, it } from 'vitest'
import { validateAliasName } from '@/lib/indexName'

// The index-manager's ValidateAliasName, checked before sending.
describe('validateAliasName', () => {
  it('accepts a source-like name and refuses what the index-manager refuses, saying why', () => {
    expect(validateAliasName('news-current')).toBeNull()
    expect(validateAliasName('a')).toBeNull()
    expect(validateAliasName('')).toMatch(/required/)
    expect(validateAliasName('News')).toMatch(/lowercase/)
    expect(validateAliasName('-x')).toMatch(/starting with a letter or digit/)
    expect(validateAliasName('x*')).toMatch(/lowercase letters/)
    expect(validateAliasName('a'.repeat(201))).toMatch(/1 to 200/)
    expect(validateAliasName('metro_raw_content')).toMatch(/read the index twice/)
    expect(validateAliasName('metro_classified_content')).toMatch(/read the index twice/)
  })
})
