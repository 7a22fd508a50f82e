/** Runs the tasks at most `limit` at a time, keeping their order in the result. */
export async function pooled<T>(tasks: (() => Promise<T>)[], limit = 4): Promise<T[]> {
  const out: T[] = new Array(tasks.length)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, async () => {
    while (next < tasks.length) {
      const i = next++
      out[i] = await tasks[i]!()
    }
  }))
  return out
}
