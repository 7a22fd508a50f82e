// The e2e harness: its own copies of the classifier, publisher,
// index-manager and dashboard server on free ports, fresh Postgres
// databases, a unique Elasticsearch prefix, and headless Chromium (Debian's
// package, driven by playwright-core). Everything is removed at the end.
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const dashboardDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const root = path.resolve(dashboardDir, '..')
// The services' binaries: bin/ (scripts/task build), or E2E_BIN_DIR, for a
// build of another checkout (say, of the last commit beside work in progress).
export const bin = process.env.E2E_BIN_DIR || path.join(root, 'bin')
export const artifacts = path.join(dashboardDir, 'e2e', '.artifacts')
// Screenshots go to the (ignored) artifacts directory, so a test run leaves
// the tree clean; UPDATE_SCREENSHOTS=1 writes the ones the README shows.
export const screenshots = process.env.UPDATE_SCREENSHOTS === '1'
  ? path.join(dashboardDir, 'docs', 'screenshots')
  : path.join(artifacts, 'screenshots')
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** The alert the harness's Prometheus always fires (its own rule file, not the deployment's). */
export const E2E_ALERT = 'E2EHarnessAlwaysFiring'

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Waits until fn returns a truthy value, or throws naming what. */
export async function waitFor(what, fn, { timeout = 60_000, interval = 300 } = {}) {
  const deadline = Date.now() + timeout
  let last
  for (;;) {
    try {
      const v = await fn()
      if (v) return v
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last.message}` : ''}`)
    await sleep(interval)
  }
}

/** The services' settings: from the environment, else from scripts/services.sh. */
export function serviceEnv() {
  if (process.env.POSTGRES_ADMIN_URL && process.env.ELASTICSEARCH_URL && process.env.JWT_SECRET && process.env.REDIS_URL) {
    return process.env
  }
  execFileSync(path.join(root, 'scripts', 'services.sh'), ['up'], { stdio: ['ignore', 'inherit', 'inherit'] })
  const out = execFileSync(path.join(root, 'scripts', 'services.sh'), ['env'], { encoding: 'utf8' })
  const env = { ...process.env }
  for (const line of out.split('\n')) {
    const m = /^export ([A-Z_]+)='(.*)'$/.exec(line.trim())
    if (m) env[m[1]] = m[2]
  }
  return env
}

/** Builds bin/ when a binary is missing (scripts/task build does the same). */
export function ensureBinaries() {
  const need = { classifier: 'classifier', publisher: 'publisher', 'index-manager': 'index-manager', loader: 'classifier', dashboard: 'dashboard/server' }
  for (const [name, module] of Object.entries(need)) {
    if (existsSync(path.join(bin, name))) continue
    execFileSync('go', ['build', '-o', `${bin}/`, './cmd/...'], { cwd: path.join(root, module), stdio: 'inherit' })
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

function dbURL(adminURL, name) {
  const u = new URL(adminURL)
  u.pathname = `/${name}`
  return u.toString()
}

function withUser(dsn, user, password) {
  const u = new URL(dsn)
  u.username = user
  u.password = password
  return u.toString()
}

function psql(adminURL, sql) {
  execFileSync('psql', [adminURL, '-v', 'ON_ERROR_STOP=1', '-q', '-c', sql], { stdio: ['ignore', 'ignore', 'inherit'] })
}

export class Harness {
  constructor() {
    this.id = randomBytes(4).toString('hex')
    // nctest: the prefix every test index uses, which a native stack running
    // beside the tests leaves alone (scripts/run.sh, infrastructure/testenv).
    this.prefix = `nctest${this.id}`
    this.protectedIndex = `${this.prefix}_zzkeep_classified_content`
    this.procs = []
    this.databases = []
    this.cleanups = []
  }

  async start() {
    this.env = serviceEnv()
    ensureBinaries()
    mkdirSync(artifacts, { recursive: true })
    mkdirSync(screenshots, { recursive: true })
    const admin = this.env.POSTGRES_ADMIN_URL
    const db = (svc) => {
      const name = `${this.prefix}_${svc}`
      psql(admin, `CREATE DATABASE ${name}`)
      this.databases.push(name)
      return dbURL(admin, name)
    }
    const classifierDB = db('classifier')
    const publisherDB = db('publisher')
    const indexManagerDB = db('index_manager')

    this.username = 'operator'
    this.password = `pw-${randomBytes(6).toString('hex')}`
    const hash = execFileSync(path.join(bin, 'index-manager'), ['hash-password'], { input: this.password, encoding: 'utf8' }).trim()
    // A viewer (same password) who may not read message bodies
    // (VIEWER_MESSAGE_BODIES=hide keeps them from viewers only).
    this.viewer = 'viewer'
    // An account of the operator role (the admin account above is named
    // 'operator'; this one is not an admin): same password.
    this.operatorUser = 'oncall'
    const accountsDir = mkdtempSync(path.join(tmpdir(), 'nc-e2e-accounts-'))
    this.cleanups.push(() => rmSync(accountsDir, { recursive: true, force: true }))
    const accountsFile = path.join(accountsDir, 'accounts')
    writeFileSync(accountsFile, `${this.viewer} viewer ${hash}\n${this.operatorUser} operator ${hash}\n`, { mode: 0o600 })

    const base = { LOG_FORMAT: 'text', LOG_LEVEL: 'info' }
    // The publisher first: its migrations create the outbox the classifier writes to.
    this.publisher = await this.service('publisher', 'PUBLISHER_HTTP_ADDR', {
      ...base,
      PUBLISHER_DATABASE_URL: publisherDB,
      PUBLISHER_OUTBOX_POLL_INTERVAL: '200ms',
    })
    this.classifier = await this.service('classifier', 'CLASSIFIER_HTTP_ADDR', {
      ...base,
      CLASSIFIER_DATABASE_URL: classifierDB,
      CLASSIFIER_OUTBOX_DATABASE_URL: withUser(publisherDB, 'classifier', 'classifier'),
      CLASSIFIER_INDEX_PATTERN: `${this.prefix}*_raw_content`,
      CLASSIFIER_POLL_INTERVAL: '200ms',
      CLASSIFIER_DLQ_RETRY_INTERVAL: '1s',
      CLASSIFIER_REPUTATION_REFRESH: '1s',
      // Small reprocess pages: a task of the bulk source's 2,000 documents
      // runs long enough to be cancelled from its row.
      CLASSIFIER_REPROCESS_PAGE_SIZE: '5',
      CLASSIFIER_ID: `e2e-${this.prefix}`,
    })
    this.indexManager = await this.service('index-manager', 'INDEX_MANAGER_HTTP_ADDR', {
      ...base,
      INDEX_MANAGER_DATABASE_URL: indexManagerDB,
      INDEX_MANAGER_ADMIN_USER: this.username,
      INDEX_MANAGER_ADMIN_PASSWORD_HASH: hash,
      INDEX_MANAGER_ACCOUNTS_FILE: accountsFile,
      VIEWER_MESSAGE_BODIES: 'hide',
      // One protected index, which the bulk actions must report as refused.
      INDEX_MANAGER_PROTECTED_INDICES: this.protectedIndex,
    })
    // A real Alertmanager (Debian's package) with the project's
    // configuration, which this Prometheus sends its alerts to: the Alerts
    // page's silences and the health strip's count are its own.
    this.alertmanager = await this.startAlertmanager()
    // A real Prometheus (Debian's package) scraping the classifier and the
    // publisher every second: the Overview's charts read their history.
    this.prometheus = await this.startPrometheus({ classifier: this.classifier.addr, publisher: this.publisher.addr }, this.alertmanager.addr)
    const upstreams = {
      PROMETHEUS_URL: `http://${this.prometheus.addr}`,
      // This run's own, not the ALERTMANAGER_URL of scripts/services.sh.
      ALERTMANAGER_URL: `http://${this.alertmanager.addr}`,
      CLASSIFIER_URL: `http://${this.classifier.addr}`,
      PUBLISHER_URL: `http://${this.publisher.addr}`,
      INDEX_MANAGER_URL: `http://${this.indexManager.addr}`,
      DASHBOARD_DIST: path.join(dashboardDir, 'dist'),
      // The live tail subscribes to the publisher's Redis.
      DASHBOARD_REDIS_URL: this.env.REDIS_URL,
    }
    this.dashboard = await this.service('dashboard', 'DASHBOARD_ADDR', upstreams)
    // The second dashboard is read-only and has every feature inside a view turned off; the
    // view flags (rules, index_manager) stay on, since its steps use those views.
    this.readOnlyDashboard = await this.service('dashboard', 'DASHBOARD_ADDR', {
      ...upstreams, DASHBOARD_READ_ONLY: 'true', DASHBOARD_FEATURES: 'live_tail=off,reprocess=off,query_explorer=off,exports=off,rules_edit=off,labelling=off',
    }, 'dashboard-read-only')
    this.url = `http://${this.dashboard.addr}`
    return this
  }

  async service(binary, addrVar, env, label = binary) {
    const port = await freePort()
    const proc = { label, binary, addr: `127.0.0.1:${port}`, env: { ...this.env, ...env, [addrVar]: `127.0.0.1:${port}` }, exited: true }
    this.procs.push(proc)
    await this.run(proc)
    return proc
  }

  /** Starts a service's process (again, on the same address) and waits for its /ready. */
  async run(proc) {
    const log = createWriteStream(path.join(artifacts, `${this.prefix}-${proc.label}.log`), { flags: 'a' })
    const child = spawn(path.join(bin, proc.binary), [], { env: proc.env, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.pipe(log)
    child.stderr.pipe(log)
    proc.child = child
    proc.exited = false
    child.on('exit', () => { proc.exited = true })
    await waitFor(`${proc.label} /ready`, async () => {
      if (proc.exited) throw new Error(`${proc.label} exited; see ${log.path}`)
      const res = await fetch(`http://${proc.addr}/ready`)
      return res.ok
    })
  }

  /** Stops a service's process (SIGTERM, as an orchestrator would) and waits for it to exit. */
  async halt(proc) {
    if (proc.exited) return
    const gone = new Promise((resolve) => proc.child.once('exit', resolve))
    proc.child.kill('SIGTERM')
    await gone
  }

  /**
   * Debian's prometheus-alertmanager with deploy/alertmanager/alertmanager.yml
   * (group_wait cut to 1 s), its silences in a temporary directory, on a
   * free port, without clustering.
   */
  async startAlertmanager() {
    const amBin = ['/usr/bin/prometheus-alertmanager', '/usr/local/bin/alertmanager'].find((p) => existsSync(p))
    if (!amBin) throw new Error('alertmanager is missing: apt-get install prometheus-alertmanager')
    const dir = mkdtempSync(path.join(tmpdir(), 'nc-e2e-alertmanager-'))
    this.cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const cfg = readFileSync(path.join(root, 'deploy', 'alertmanager', 'alertmanager.yml'), 'utf8').replace(/^(\s+group_wait:\s*)\S+$/m, '$11s')
    writeFileSync(path.join(dir, 'alertmanager.yml'), cfg)
    const addr = `127.0.0.1:${await freePort()}`
    const log = createWriteStream(path.join(artifacts, `${this.prefix}-alertmanager.log`))
    const child = spawn(amBin, [
      `--config.file=${path.join(dir, 'alertmanager.yml')}`, `--storage.path=${path.join(dir, 'data')}`,
      `--web.listen-address=${addr}`, '--cluster.listen-address=', '--log.level=warn',
    ], { stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.pipe(log)
    child.stderr.pipe(log)
    const proc = { label: 'alertmanager', addr, child, exited: false }
    child.on('exit', () => { proc.exited = true })
    this.procs.push(proc)
    await waitFor('alertmanager /-/ready', async () => {
      if (proc.exited) throw new Error(`alertmanager exited; see ${log.path}`)
      return (await fetch(`http://${addr}/-/ready`)).ok
    })
    return proc
  }

  /** The alerts this run's Alertmanager holds that no silence or inhibition does (its own filter). */
  async firingAlerts() {
    const res = await fetch(`http://${this.alertmanager.addr}/api/v2/alerts?active=true&silenced=false&inhibited=false`)
    if (!res.ok) throw new Error(`alertmanager /api/v2/alerts: ${res.status}`)
    return res.json()
  }

  async startPrometheus(targets, alertmanager) {
    const promBin = ['/usr/bin/prometheus', '/usr/local/bin/prometheus'].find((p) => existsSync(p))
    if (!promBin) throw new Error('prometheus is missing: apt-get install prometheus')
    const dir = mkdtempSync(path.join(tmpdir(), 'nc-e2e-prometheus-'))
    this.cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    // The deployment's alert rules, each with its `for` cut to 5 s, so a
    // stopped service fires ServiceDown within seconds instead of minutes.
    const rules = readFileSync(path.join(root, 'deploy', 'prometheus', 'alerts.yml'), 'utf8').replace(/^(\s+for:\s*)\S+$/gm, '$15s')
    writeFileSync(path.join(dir, 'alerts.yml'), rules)
    // One rule of the test's own, which always fires: the health strip
    // counts it, and the browser test silences it.
    writeFileSync(path.join(dir, 'e2e-alerts.yml'), [
      'groups:', '  - name: e2e-harness', '    rules:',
      `      - alert: ${E2E_ALERT}`, '        expr: vector(1)',
      '        labels: {severity: warning, origin: e2e-harness}',
      '        annotations: {summary: "Always fires: the dashboard browser test\'s own alert, which it silences"}', '',
    ].join('\n'))
    let cfg = 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nrule_files:\n  - alerts.yml\n  - e2e-alerts.yml\n'
    if (alertmanager) cfg += `alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [${JSON.stringify(alertmanager)}]\n`
    cfg += 'scrape_configs:\n'
    for (const [job, addr] of Object.entries(targets)) cfg += `  - job_name: ${JSON.stringify(job)}\n    static_configs:\n      - targets: [${JSON.stringify(addr)}]\n`
    writeFileSync(path.join(dir, 'prometheus.yml'), cfg)
    const addr = `127.0.0.1:${await freePort()}`
    const log = createWriteStream(path.join(artifacts, `${this.prefix}-prometheus.log`))
    const child = spawn(promBin, [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=${addr}`, '--log.level=warn',
      // Alertmanager hears every firing alert again each 2 s, not each minute: one
      // sent before it was discovered at start-up is not lost for a minute.
      '--rules.alert.resend-delay=2s'], { stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.pipe(log)
    child.stderr.pipe(log)
    const proc = { label: 'prometheus', addr, child, exited: false }
    child.on('exit', () => { proc.exited = true })
    this.procs.push(proc)
    await waitFor('prometheus /-/ready', async () => {
      if (proc.exited) throw new Error(`prometheus exited; see ${log.path}`)
      return (await fetch(`http://${addr}/-/ready`)).ok
    })
    return proc
  }

  /** One value from a SQL query on one of this run's databases (classifier, publisher, index_manager). */
  sql(service, query) {
    const url = dbURL(this.env.POSTGRES_ADMIN_URL, `${this.prefix}_${service}`)
    return execFileSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-At', '-c', query], { encoding: 'utf8' }).trim()
  }

  /** Calls Elasticsearch's REST API. */
  async es(method, p, body) {
    const res = await fetch(`${this.env.ELASTICSEARCH_URL}${p}`, {
      method,
      headers: { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    })
    const text = await res.text()
    if (!res.ok && res.status !== 404) throw new Error(`ES ${method} ${p}: ${res.status} ${text}`)
    return text ? JSON.parse(text) : {}
  }

  /** Whether Elasticsearch holds an index of this name (HEAD: 200 or 404). */
  async indexExists(name) {
    const res = await fetch(`${this.env.ELASTICSEARCH_URL}/${encodeURIComponent(name)}`, { method: 'HEAD' })
    if (res.status !== 200 && res.status !== 404) throw new Error(`ES HEAD /${name}: ${res.status}`)
    return res.status === 200
  }

  /** Writes one raw document as the crawler would, pending classification. */
  async writeRawDocument(source, doc) {
    const id = doc.id ?? `${this.prefix}-${randomBytes(6).toString('hex')}`
    const now = new Date().toISOString()
    const text = doc.raw_text ?? 'A test article body with enough words to be classified as content by the pipeline.'
    await this.es('PUT', `/${source}_raw_content/_doc/${encodeURIComponent(id)}?refresh=true`, {
      id,
      url: doc.url ?? `https://example.org/${id}`,
      source_name: source,
      title: doc.title ?? 'Test article',
      raw_text: text,
      og_type: 'article',
      published_date: now,
      crawled_at: now,
      word_count: text.split(/\s+/).length,
      classification_status: 'pending',
    })
    return id
  }

  load(count, sources) {
    return execFileSync(path.join(bin, 'loader'), ['-count', String(count), '-sources', sources.join(','), '-refresh'], {
      env: this.env,
      encoding: 'utf8',
    })
  }

  /** load, without blocking: resolves when the loader is done. */
  loadAsync(count, sources) {
    return new Promise((resolve, reject) => {
      const child = spawn(path.join(bin, 'loader'), ['-count', String(count), '-sources', sources.join(','), '-refresh'], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.on('data', (d) => { out += d })
      child.stderr.on('data', (d) => { out += d })
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`loader exited ${code}: ${out.slice(-500)}`))))
    })
  }

  async api(service, method, p, body, token) {
    const res = await fetch(`${this.url}/api/${service}${p}`, {
      method,
      headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }

  async launchBrowser() {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`)
    const { chromium } = await import('playwright-core')
    const profile = mkdtempSync(path.join(tmpdir(), 'nc-e2e-chromium-'))
    this.cleanups.push(() => rmSync(profile, { recursive: true, force: true }))
    this.context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1440, height: 900 },
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
    })
    this.context.setDefaultTimeout(20_000)
    await this.watchCSP(this.context)
    return this.context
  }

  /**
   * Collects every Content-Security-Policy violation of the context's pages
   * into this.cspViolations: the documents' securitypolicyviolation events
   * (reported through a binding, which the policy does not govern) and
   * Chromium's console lines about the policy. The dashboard's server sends
   * a strict policy (dashboard/server/headers.go); the test asserts none.
   */
  async watchCSP(context) {
    this.cspViolations = []
    await context.exposeBinding('__ncCSPViolation', ({ page }, v) => {
      this.cspViolations.push(`${page?.url() ?? '?'}: ${v.directive} blocked ${v.blocked || '(inline)'}${v.source ? ` in ${v.source}:${v.line}` : ''}${v.sample ? ` (${v.sample})` : ''}`)
    })
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        window.__ncCSPViolation({ directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber, sample: e.sample })
      })
    })
    context.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) this.cspViolations.push(`${m.page()?.url() ?? '?'}: console: ${m.text()}`)
    })
  }

  async stop() {
    const errors = []
    try {
      await this.context?.close()
    } catch (e) {
      errors.push(e)
    }
    await Promise.all(
      this.procs.reverse().map(
        (p) =>
          new Promise((resolve) => {
            if (p.exited) return resolve()
            const t = setTimeout(() => { p.child.kill('SIGKILL'); resolve() }, 30_000)
            p.child.once('exit', () => { clearTimeout(t); resolve() })
            p.child.kill('SIGTERM')
          }),
      ),
    )
    for (const name of this.databases) {
      try {
        psql(this.env.POSTGRES_ADMIN_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } catch (e) {
        errors.push(e)
      }
    }
    try {
      await this.es('DELETE', `/${this.prefix}*?allow_no_indices=true&expand_wildcards=all`)
    } catch (e) {
      errors.push(e)
    }
    for (const fn of this.cleanups) fn()
    if (errors.length) console.error('e2e cleanup problems:', errors.map((e) => e.message).join('; '))
  }
}
