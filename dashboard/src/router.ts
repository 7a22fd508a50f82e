import { createRouter, createWebHistory, type RouteLocationRaw, type Router } from 'vue-router'
import { session } from '@/auth/session'

export const routes = [
  { path: '/login', name: 'login', component: () => import('@/views/LoginView.vue'), meta: { public: true, title: 'Sign in' } },
  {
    path: '/',
    component: () => import('@/components/layout/AppShell.vue'),
    children: [
      { path: '', name: 'overview', component: () => import('@/views/OverviewView.vue'), meta: { title: 'Overview' } },
      // meta.feature: DASHBOARD_FEATURES can turn the view off (AppShell then shows a notice instead).
      { path: 'indices', name: 'indices', component: () => import('@/views/intelligence/IndexManagerView.vue'), meta: { title: 'Index Manager', feature: 'index_manager' } },
      { path: 'rules', name: 'rules', component: () => import('@/views/intelligence/RulesManagementView.vue'), meta: { title: 'Rules', feature: 'rules' } },
      { path: 'dlq', name: 'dlq', component: () => import('@/views/DeadLetterView.vue'), meta: { title: 'Dead letters' } },
      { path: 'outbox', name: 'outbox', component: () => import('@/views/OutboxView.vue'), meta: { title: 'Outbox' } },
      { path: 'labelling', name: 'labelling', component: () => import('@/views/LabellingView.vue'), meta: { title: 'Labelling' } },
      { path: 'sources', name: 'sources', component: () => import('@/views/SourcesView.vue'), meta: { title: 'Sources' } },
      { path: 'documents/:index/:id', name: 'document', component: () => import('@/views/DocumentView.vue'), meta: { title: 'Document' } },
      { path: 'find', name: 'find', component: () => import('@/views/FindView.vue'), meta: { title: 'Find a document' } },
      { path: 'live', name: 'live', component: () => import('@/views/LiveTailView.vue'), meta: { title: 'Live tail' } },
      { path: 'alerts', name: 'alerts', component: () => import('@/views/AlertsView.vue'), meta: { title: 'Alerts' } },
      { path: 'audit', name: 'audit', component: () => import('@/views/AuditView.vue'), meta: { title: 'Audit log' } },
    ],
  },
  { path: '/:pathMatch(.*)*', redirect: '/' },
]

/** Where a signed-out operator goes: the login page, remembering the way back. */
export function loginRedirect(fullPath: string): RouteLocationRaw {
  return fullPath && fullPath !== '/' && !fullPath.startsWith('/login')
    ? { name: 'login', query: { redirect: fullPath } }
    : { name: 'login' }
}

export function installGuards(router: Router): void {
  router.beforeEach((to) => {
    if (to.meta.public) return true
    if (!session.isAuthenticated.value) return loginRedirect(to.fullPath)
    return true
  })
  router.afterEach((to) => {
    const title = typeof to.meta.title === 'string' ? to.meta.title : ''
    document.title = title ? `${title} · North Cloud` : 'North Cloud'
  })
}

export function createAppRouter(): Router {
  const router = createRouter({ history: createWebHistory(), routes })
  installGuards(router)
  return router
}
