import { expect } from 'chai';
import { loadConfig } from '../../config';
import { chooseRoute, configuredKinds, routesOf } from '../../pool/model-routes';
import { moderationRoute } from '../../pool/task-routes';

describe('which provider runs a task', () => {
  const routes = { fal: { model: 'fal-ai/flux/dev' }, replicate: { model: 'black-forest-labs/flux-kontext-pro' }, simulator: { model: 'image' } };

  it('takes the first kind of the order that the routes name and that has an account', () => {
    const order = ['replicate', 'fal', 'simulator'] as const;
    expect(chooseRoute(routes, order, new Set(['fal', 'simulator']))).to.deep.equal({ kind: 'fal', route: routes.fal });
    expect(chooseRoute(routes, order, new Set(['replicate', 'fal']))).to.deep.equal({ kind: 'replicate', route: routes.replicate });
    expect(chooseRoute(routes, ['simulator', 'fal'], new Set(['replicate', 'fal', 'simulator']))).to.deep.equal({ kind: 'simulator', route: routes.simulator });
  });

  it('answers null when no kind with an account has a route: the effect is not offered', () => {
    expect(chooseRoute({ replicate: routes.replicate }, ['replicate', 'fal', 'simulator'], new Set(['fal', 'simulator']))).to.equal(null);
    expect(chooseRoute(routes, ['fal'], new Set(['replicate']))).to.equal(null);
  });

  it('runs an effect without routes on the simulator, on its model', () => {
    expect(routesOf(null, 'video')).to.deep.equal({ simulator: { model: 'video' } });
    expect(routesOf(routes, 'video')).to.equal(routes);
  });

  it('knows the kinds with accounts from the configuration, and its order from PROVIDER_KIND_ORDER', () => {
    const config = loadConfig({ DATA_DIR: '/tmp/effects-model-routes-test', TOKEN_SECRET: 'x'.repeat(40) });
    expect([...configuredKinds(config.generations.providerAccounts)]).to.deep.equal(['simulator']);
    expect(config.generations.providerKindOrder).to.deep.equal(['replicate', 'fal', 'simulator']);
    expect(loadConfig({ DATA_DIR: '/tmp/effects-model-routes-test', TOKEN_SECRET: 'x'.repeat(40), PROVIDER_KIND_ORDER: 'fal, simulator' }).generations.providerKindOrder).to.deep.equal(['fal', 'simulator']);
    for (const bad of ['openai', 'fal,fal', 'replicate,,x']) {
      expect(() => loadConfig({ DATA_DIR: '/tmp/effects-model-routes-test', TOKEN_SECRET: 'x'.repeat(40), PROVIDER_KIND_ORDER: bad }), bad).to.throw('PROVIDER_KIND_ORDER');
    }
  });

  it('runs moderation on the route of MODERATION_RUNS whose kind has an account, the simulator\'s model when none is configured', () => {
    const env = { DATA_DIR: '/tmp/effects-model-routes-test', TOKEN_SECRET: 'x'.repeat(40) };
    const onFal = { model: 'openrouter/router/vision', input: { image_urls: ['{{photo}}'], prompt: '{{prompt}}' }, output: 'output' };
    const configured = loadConfig({ ...env, FAL_ACCOUNTS: 'key-id:key-secret:2', MODERATION_RUNS: JSON.stringify({ fal: onFal }) });
    expect(moderationRoute(configured)).to.deep.equal({ kind: 'fal', route: onFal });
    expect(moderationRoute(loadConfig(env))).to.deep.equal({ kind: 'simulator', route: { model: 'moderation' } });
    expect(moderationRoute(loadConfig({ ...env, FAL_ACCOUNTS: 'key-id:key-secret:2' })), 'no fal route').to.equal(null);
  });
});
