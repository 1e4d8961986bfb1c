// Internal helpers shared by the modules in tests/e2e/lib. NOT re-exported by tests/e2e/helpers.mjs,
// so nothing here is part of the helpers' public surface.

export function portOf(target) {
  return typeof target === 'number' ? target : target.port;
}
