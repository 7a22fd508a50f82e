// Ends vitest's output with one "N passed, N failed" line for CI.
import type { Reporter, TestModule } from 'vitest/node'

export default class SummaryReporter implements Reporter {
  private line = ''

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const m of modules) {
      for (const t of m.children.allTests()) {
        const s = t.result().state
        if (s === 'passed') passed++
        else if (s === 'failed') failed++
        else skipped++
      }
      if (m.state() === 'failed' && [...m.children.allTests()].length === 0) failed++
    }
    this.line = `vitest: ${passed} passed, ${failed} failed, ${skipped} skipped`
  }

  // After the default reporter's summary, so this is the last line.
  onFinished(): void {
    if (this.line) process.stdout.write(`\n${this.line}\n`)
  }
}
