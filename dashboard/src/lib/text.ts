/**
 * Control characters (terminal escapes, newlines, NUL) shown escaped, as
 * \x1b or \n, so text from the services can neither drive a terminal-like
 * rendering nor hide itself.
 */
export function escapeControl(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    if (c === '\n') return '\\n'
    if (c === '\t') return '\\t'
    if (c === '\r') return '\\r'
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`
  })
}
