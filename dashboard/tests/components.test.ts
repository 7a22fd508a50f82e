import { describe, expect, it } from 'vitest'
import { mount } from '@vue/test-utils'
import KeywordInput from '@/components/ui/KeywordInput.vue'
import QueryState from '@/components/ui/QueryState.vue'
import HighlightedText from '@/components/ui/HighlightedText.vue'
import IndexTable from '@/components/indices/IndexTable.vue'
import type { IndexSummary } from '@/types/indexManager'

describe('KeywordInput', () => {
  it('adds a chip on Enter, removes on Backspace and by its button', async () => {
    const w = mount(KeywordInput, { props: { modelValue: ['gun'], label: 'Keywords', 'onUpdate:modelValue': (v: string[]) => w.setProps({ modelValue: v }) } })
    const input = w.get('input')
    await input.setValue('knife')
    await input.trigger('keydown', { key: 'Enter' })
    expect(w.props('modelValue')).toEqual(['gun', 'knife'])
    await input.setValue('')
    await input.trigger('keydown', { key: 'Backspace' })
    expect(w.props('modelValue')).toEqual(['gun'])
    await w.get('button[aria-label="Remove keyword gun"]').trigger('click')
    expect(w.props('modelValue')).toEqual([])
  })
})

describe('QueryState', () => {
  it('shows loading, error with retry, empty, then the content', async () => {
    const w = mount(QueryState, { props: { loading: true }, slots: { default: '<p id="data">data</p>' } })
    expect(w.find('[data-state="loading"]').exists()).toBe(true)
    await w.setProps({ loading: false, error: new Error('boom') })
    expect(w.text()).toContain('boom')
    await w.get('button').trigger('click')
    expect(w.emitted('retry')).toHaveLength(1)
    await w.setProps({ error: null, empty: true, emptyText: 'none' })
    expect(w.text()).toContain('none')
    await w.setProps({ empty: false })
    expect(w.find('#data').exists()).toBe(true)
  })
})

describe('HighlightedText', () => {
  it('marks the matched spans', () => {
    const w = mount(HighlightedText, { props: { text: 'An armed robbery', highlights: [{ start: 3, end: 16, keyword: 'armed robbery' }] } })
    expect(w.findAll('mark').map((m) => m.text())).toEqual(['armed robbery'])
    expect(w.text()).toBe('An armed robbery')
  })
})

describe('IndexTable', () => {
  const idx = (name: string): IndexSummary => ({
    name, index_type: 'raw_content', doc_count: 1, storage_bytes: 1, health: 'green', status: 'open', storage_size: '', primary_count: 1, replica_count: 0, created_at: '',
  })
  const props = { rows: [idx('a_raw_content'), idx('b_raw_content')], sortKey: 'name' as const, sortDir: 'asc' as const, readOnly: false, refreshing: null }

  it('selects one row, every listed row from the header, and none from the header when all are selected', async () => {
    const w = mount(IndexTable, { props: { ...props, selected: [] } })
    await w.get('input[aria-label="Select b_raw_content"]').trigger('change')
    await w.get('[data-testid="select-all-indices"]').trigger('change')
    expect(w.emitted('select')).toEqual([[['b_raw_content'], true], [['a_raw_content', 'b_raw_content'], true]])
    await w.setProps({ selected: ['a_raw_content'] })
    expect((w.get('[data-testid="select-all-indices"]').element as HTMLInputElement).indeterminate).toBe(true)
    await w.setProps({ selected: ['a_raw_content', 'b_raw_content', 'gone_raw_content'] })
    await w.get('[data-testid="select-all-indices"]').trigger('change')
    expect(w.emitted('select')?.at(-1)).toEqual([['a_raw_content', 'b_raw_content'], false])
  })

  it('has no checkboxes in read-only mode', () => {
    const w = mount(IndexTable, { props: { ...props, selected: [], readOnly: true } })
    expect(w.findAll('input[type="checkbox"]')).toHaveLength(0)
  })
})
