import { createApp, watch } from 'vue'
import { VueQueryPlugin } from '@tanstack/vue-query'
import App from './App.vue'
import { createAppRouter, loginRedirect } from './router'
import { createQueryClient } from './queryClient'
import { isLive, needsRefresh, session } from './auth/session'
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
// Every 30 s: a session past its end is over; an access token about to
// expire is refreshed ahead, so no request (nor the live tail) meets a 401.
setInterval(() => {
  const s = session.current.value
  if (s && !isLive(s)) session.end('expired')
  else if (needsRefresh(s)) void session.freshToken()
}, 30_000)

createApp(App).use(router).use(VueQueryPlugin, { queryClient }).mount('#app')
