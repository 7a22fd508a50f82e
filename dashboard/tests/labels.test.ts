import { afterEach, describe, expect, it, vi } from 'vitest'
import { flushPromises, mount } from '@vue/test-utils'
import { QueryClient, VueQueryPlugin } from '@tanstack/vue-query'
import { createClassifierApi } from '@/api/classifier'
import { createHttpClient } from '@/api/http'
import {
  confusionTable, defaultModelName, overallAccuracy, perLabelRows, predictedText, reasonText, topicChoices, trainingShortfall,
} from '@/lib/labels'
import type { LabelCandidate, LabelStats } from '@/types/classifier'
import LabelCandidateCard from '@/components/labels/LabelCandidateCard.vue'
import LabelQueue from '@/components/labels/LabelQueue.vue'
import ConfusionMatrix from '@/components/labels/ConfusionMatrix.vue'
import LabelList from '@/components/labels/LabelList.vue'

const candidate = (over: Partial<LabelCandidate> = {}): LabelCandidate => ({
  index: 'demo_news_raw_content', id: 'doc-1', title: 'Cup final tonight', snippet: 'The first 300 characters…',
  primary_topic: 'sports', confidence: 0.42, topics: ['sports', 'business'], reason: 'low_confidence', ...over,
})

const stats: LabelStats = {
  labelled: 5,
  topics: [{ topic: 'sports', labelled: 3, predicted: 3, correct: 2, precision: 2 / 3, recall: 2 / 3 }],
  confusion: { sports: { sports: 2, none: 1 }, crime: { sports: 1, crime: 1 } },
  weeks: [{ week: '2026-11-16', labelled: 1, correct: 0 }, { week: '2026-11-23', labelled: 4, correct: 3 }],
}

afterEach(() => vi.unstubAllGlobals())

describe('labelling arithmetic', () => {
  it('offers the classifier\'s suggestion first, then its other topics, then the rest, each once', () => {
    expect(topicChoices(candidate(), ['business', 'crime', 'sports'])).toEqual(['sports', 'business', 'crime'])
    expect(topicChoices(candidate({ primary_topic: '', topics: [] }), ['business', 'crime'])).toEqual(['business', 'crime'])
    // A suggestion the available topics do not list is still offered.
    expect(topicChoices(candidate({ primary_topic: 'weather', topics: ['weather'] }), ['crime'])).toEqual(['weather', 'crime'])
  })

  it('says what the classifier said and why a document is offered', () => {
    expect(predictedText('sports', 0.42)).toBe('sports, 42%')
    expect(predictedText('', 0)).toBe('no topic')
    expect(reasonText('no_topic')).toBe('No topic')
    expect(reasonText('disputed')).toBe('Rules disagree with the model')
    expect(reasonText('something_new')).toBe('something_new')
  })

  it('lays the confusion out with labels as rows, predicted topics as columns and none last', () => {
    const t = confusionTable(stats.confusion)
    expect(t.labels).toEqual(['crime', 'sports'])
    expect(t.predicted).toEqual(['crime', 'sports', 'none'])
    expect(t.cells).toEqual([[1, 1, 0], [0, 2, 1]])
    expect(t.rowTotals).toEqual([2, 3])
    expect(confusionTable(undefined)).toEqual({ labels: [], predicted: [], cells: [], rowTotals: [] })
  })

  it('counts per label, largest first, and says when there are too few labels to train', () => {
    expect(perLabelRows({ crime: 1, sports: 3, business: 3 })).toEqual([
      { label: 'business', count: 3 }, { label: 'sports', count: 3 }, { label: 'crime', count: 1 },
    ])
    expect(trainingShortfall({ sports: 3 })).toMatch(/at least two topics/)
    expect(trainingShortfall({ sports: 3, crime: 1 })).toBe('Training needs at least two labels per topic (crime has one).')
    expect(trainingShortfall({ sports: 2, crime: 2 })).toBeNull()
  })

  it('measures the overall accuracy over the weeks, and names a model after the time', () => {
    expect(overallAccuracy(stats)).toBeCloseTo(3 / 5)
    expect(overallAccuracy({ ...stats, weeks: [] })).toBeNull()
    expect(defaultModelName(new Date('2026-11-28T10:05:00Z'))).toBe('labels-2026-11-28-1005')
  })
})

describe('the labels API', () => {
  it('builds the classifier\'s label and model routes', async () => {
    const calls: { url: string; method: string; body?: string }[] = []
    const f = vi.fn(async (url: RequestInfo | URL, init?: RequestInit) => {
      calls.push({ url: String(url), method: init?.method ?? 'GET', body: init?.body as string | undefined })
      if (String(url).endsWith('/export')) return new Response('{"id":"a/b","label":"sports","title":"t","text":"x"}\n', { status: 200, headers: { 'Content-Type': 'application/x-ndjson' } })
      return new Response(init?.method === 'DELETE' ? null : '{}', { status: init?.method === 'DELETE' ? 204 : 200 })
    })
    const api = createClassifierApi(createHttpClient({ baseUrl: '/api/classifier', getToken: () => 't', fetch: f as unknown as typeof fetch }))
    await api.labelCandidates()
    await api.putLabel({ index: 'demo_news_raw_content', id: 'doc 1', label: 'sports' })
    await api.listLabels()
    await api.deleteLabel(12)
    expect(await api.exportLabels()).toContain('"label":"sports"')
    await api.labelStats()
    await api.trainFromLabels('from labels')
    await api.listModels()
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      'GET /api/classifier/api/v1/labels/candidates?limit=20',
      'POST /api/classifier/api/v1/labels',
      'GET /api/classifier/api/v1/labels?limit=50',
      'DELETE /api/classifier/api/v1/labels/12',
      'GET /api/classifier/api/v1/labels/export',
      'GET /api/classifier/api/v1/labels/stats',
      'POST /api/classifier/api/v1/models/train?name=from+labels&from=labels',
      'GET /api/classifier/api/v1/models',
    ])
    expect(JSON.parse(calls[1]!.body!)).toEqual({ index: 'demo_news_raw_content', id: 'doc 1', label: 'sports' })
    expect(calls[6]!.body).toBeUndefined()
  })
})

describe('the labelling components', () => {
  const stubs = { global: { stubs: { RouterLink: true } } }

  it('a candidate has a button per topic, the suggestion first and marked, and none for a user who may not label', async () => {
    const props = { candidate: candidate(), topics: ['business', 'crime', 'sports'], readOnly: false, readsBodies: true, pending: null }
    const w = mount(LabelCandidateCard, { props, ...stubs })
    expect(w.findAll('button[data-topic]').map((b) => b.attributes('data-topic'))).toEqual(['sports', 'business', 'crime'])
    expect(w.get('button[data-topic="sports"]').classes()).toContain('bg-primary')
    expect(w.get('[data-testid="candidate-predicted"]').text()).toBe('sports, 42%')
    expect(w.get('[data-testid="candidate-reason"]').text()).toBe('Low confidence')
    expect(w.get('[role="group"]').attributes('aria-label')).toBe('Label Cup final tonight as')
    await w.get('button[data-topic="crime"]').trigger('click')
    expect(w.emitted('label')).toEqual([['crime']])

    const viewer = mount(LabelCandidateCard, { props: { ...props, readOnly: true, readsBodies: false }, ...stubs })
    expect(viewer.findAll('button').length).toBe(0)
    expect(viewer.find('[data-testid="candidate-snippet"]').exists()).toBe(false)
    expect(viewer.get('[data-testid="candidate-predicted"]').text()).toBe('sports, 42%')
  })

  it('labelling from the queue posts the label and takes the document out of the queue', async () => {
    const queue = { candidates: [candidate(), candidate({ id: 'doc-2', title: 'Other', primary_topic: '', topics: [], reason: 'no_topic' })], topics_available: ['crime', 'sports'] }
    const posted: unknown[] = []
    vi.stubGlobal('fetch', vi.fn(async (url: string, init?: RequestInit) => {
      if (url.startsWith('/api/classifier/api/v1/labels/candidates')) return Response.json(queue)
      if (url === '/api/classifier/api/v1/labels' && init?.method === 'POST') {
        posted.push(JSON.parse(init.body as string))
        queue.candidates = queue.candidates.filter((c) => c.id !== 'doc-2')
        return Response.json({ id: 1, index: 'demo_news_raw_content', content_id: 'doc-2', label: 'crime', title: 'Other' }, { status: 201 })
      }
      return new Response('{}', { status: 404 })
    }))
    const w = mount(LabelQueue, {
      props: { readOnly: false, readsBodies: true },
      global: { stubs: { RouterLink: true }, plugins: [[VueQueryPlugin, { queryClient: new QueryClient() }]] as never },
    })
    await flushPromises()
    expect(w.findAll('li[data-candidate]').map((l) => l.attributes('data-candidate'))).toEqual(['doc-1', 'doc-2'])
    expect(w.findAll('li[data-candidate="doc-2"] button[data-topic]').map((b) => b.attributes('data-topic'))).toEqual(['crime', 'sports'])
    await w.get('li[data-candidate="doc-2"] button[data-topic="crime"]').trigger('click')
    await flushPromises()
    expect(posted).toEqual([{ index: 'demo_news_raw_content', id: 'doc-2', label: 'crime' }])
    expect(w.findAll('li[data-candidate]').map((l) => l.attributes('data-candidate'))).toEqual(['doc-1'])
  })

  it('the confusion matrix has a header per predicted topic and a row per label', () => {
    const w = mount(ConfusionMatrix, { props: { confusion: stats.confusion } })
    expect(w.findAll('thead th[data-predicted]').map((t) => t.text())).toEqual(['crime', 'sports', 'none'])
    expect(w.findAll('tbody tr').map((r) => r.attributes('data-label'))).toEqual(['crime', 'sports'])
    expect(w.get('tr[data-label="sports"] td[data-predicted="none"]').text()).toBe('1')
    expect(w.get('tr[data-label="sports"] td[data-predicted="sports"]').classes()).toContain('text-success')
  })

  it('the labels list counts per label; deleting and training are there for an operator only, and a refusal to train is shown', async () => {
    const list = {
      labels: [{ id: 7, index: 'demo_news_raw_content', content_id: 'doc-1', label: 'sports', title: 'Cup final', predicted_topic: '', predicted_confidence: 0, labelled_by: 'admin', labelled_at: '2026-11-28T10:00:00Z' }],
      total: 1, per_label: { sports: 1 },
    }
    vi.stubGlobal('fetch', vi.fn(async (url: string, init?: RequestInit) => {
      if (url === '/api/features') return Response.json({ features: { exports: true }, disabled: [] })
      if (url.startsWith('/api/classifier/api/v1/labels?')) return Response.json(list)
      if (url.startsWith('/api/classifier/api/v1/models/train?') && init?.method === 'POST') {
        return Response.json({ error: { code: 'bad_request', message: 'too few labels: sports has 1' } }, { status: 400 })
      }
      return new Response('{}', { status: 404 })
    }))
    const mountList = (readOnly: boolean) => mount(LabelList, {
      props: { readOnly },
      global: { stubs: { RouterLink: true }, plugins: [[VueQueryPlugin, { queryClient: new QueryClient() }]] as never },
    })
    const viewer = mountList(true)
    await flushPromises()
    expect(viewer.get('[data-label="sports"] [data-testid="label-count"]').text()).toBe('1')
    expect(viewer.get('tr[data-label-id="7"]').text()).toContain('no topic')
    expect(viewer.find('button[aria-label^="Delete the label"]').exists()).toBe(false)
    expect(viewer.find('[data-testid="train-from-labels"]').exists()).toBe(false)
    expect(viewer.find('[data-testid="export-labels"]').exists()).toBe(true)

    const operator = mountList(false)
    await flushPromises()
    expect(operator.find('button[aria-label="Delete the label of Cup final"]').exists()).toBe(true)
    expect(operator.get('[data-testid="train-shortfall"]').text()).toMatch(/at least two topics/)
    await operator.get('form').trigger('submit')
    await flushPromises()
    expect(operator.get('[data-testid="train-error"]').text()).toBe('Training refused: too few labels: sports has 1')
  })
})
