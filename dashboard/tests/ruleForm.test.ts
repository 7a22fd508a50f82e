import { afterEach, describe, expect, it, vi } from 'vitest'
import { flushPromises, mount } from '@vue/test-utils'
import { QueryClient, VueQueryPlugin } from '@tanstack/vue-query'
import type { Rule, RuleInput } from '@/types/classifier'

const calls: { id?: number; input: RuleInput }[] = []
vi.mock('@/api/client', () => ({
  classifierApi: {
    createRule: vi.fn(async (input: RuleInput) => { calls.push({ input }); return { ...input, id: 9 } }),
    updateRule: vi.fn(async (id: number, input: RuleInput) => { calls.push({ id, input }); return { ...input, id } }),
  },
}))

const rule: Rule = {
  id: 4, name: 'Sports and games context', topic: 'crime', keywords: ['derby', 'video game'], min_confidence: 0.3, priority: 200,
  enabled: true, min_keywords: 2, threshold: 'min_keywords', effect: 'exclude', created_at: '', updated_at: '',
}

afterEach(() => {
  calls.length = 0
  document.body.innerHTML = ''
})

async function openForm(r: Rule | null) {
  const { default: RuleFormDialog } = await import('@/components/rules/RuleFormDialog.vue')
  const w = mount(RuleFormDialog, {
    props: { open: false, rule: r },
    attachTo: document.body,
    global: { plugins: [[VueQueryPlugin, { queryClient: new QueryClient() }]] },
  })
  await w.setProps({ open: true })
  await flushPromises()
  const select = document.body.querySelector<HTMLSelectElement>('[data-testid="rule-effect"]')
  expect(select, 'the effect select').not.toBeNull()
  return { w, select: select! }
}

describe('RuleFormDialog effect', () => {
  it("shows a rule's effect with its help line and sends the one chosen", async () => {
    const { select } = await openForm(rule)
    expect(select.value).toBe('exclude')
    expect(document.getElementById('rule-effect-help')?.textContent).toContain('vetoed')
    // Crime as a whole is for exclude rules only: the form says so before sending.
    select.value = 'override'
    select.dispatchEvent(new Event('change'))
    await flushPromises()
    expect(document.getElementById('rule-effect-help')?.textContent).toContain('primary')
    expect(document.body.querySelector('[role="alert"]')?.textContent).toContain('exclude rules only')
    select.value = 'exclude'
    select.dispatchEvent(new Event('change'))
    await flushPromises()
    document.body.querySelector<HTMLFormElement>('#rule-form')!.dispatchEvent(new Event('submit'))
    await flushPromises()
    expect(calls).toEqual([{ id: 4, input: expect.objectContaining({ topic: 'crime', effect: 'exclude' }) }])
  })
  it('creates a rule as support unless another effect is chosen', async () => {
    const { select } = await openForm(null)
    expect(select.value).toBe('support')
    expect(Array.from(select.options).map((o) => o.textContent)).toEqual(['Support', 'Exclude', 'Override'])
  })
})
