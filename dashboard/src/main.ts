import { createApp, watch } from 'vue'
import { VueQueryPlugin } from '@tanstack/vue-query'
import App from './App.vue'
import { createAppRouter, loginRedirect } from './router'
import { createQueryClient } from './queryClient'
import { session } from './auth/session'
import './style.css'

const router = createAppRouter()
const queryClient = createQueryClient(() => session.end('expired'))

// Any 401 (or the token's expiry) ends the session; whichever view is open
// then sends the operator to the login page.
watch(session.isAuthenticated, (ok) => {
  const route = router.currentRoute.value
  if (!ok && !route.meta.public) {
    queryClient.clear()
    void router.replace(loginRedirect(route.fullPath))
  }
})
setInterval(() => {
  const s = session.current.value
  if (s && Date.parse(s.expiresAt) <= Date.now()) session.end('expired')
}, 30_000)

createApp(App).use(router).use(VueQueryPlugin, { queryClient }).mount('#app')
