const { loadConfig } = await import('../dist/src/config/config.js');
const config = loadConfig({});
const idx = await import('../dist/src/sessions/index.js');
const { openTarget } = await import('../dist/src/targets/open.js');
const src = await idx.lazyRepository(openTarget(config), async () => { throw new Error('x'); });
for (let i = 0; i < 3; i++) { const t = performance.now(); await idx.buildCatalog(config, src); console.log((performance.now() - t).toFixed(1)); }
