/**
 * Orders strings by UTF-16 code units. For ids, paths and ISO times this is the order wanted, and
 * it is many times faster than localeCompare, which goes through ICU collation.
 */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
