import t from 'tap';
import { unsupportedNode } from '../src/node-version.js';

t.test('Node 22, 24 and 26 (and later) are supported; older lines are refused with the way out', async (t) => {
  for (const version of ['22.19.0', '22.23.3', '24.21.0', '26.10.0', '27.0.0']) t.equal(unsupportedNode(version), undefined, version);
  const message = unsupportedNode('20.20.2');
  t.equal(
    message,
    'leadhooks needs Node.js 22.19 or later (24 recommended); this is Node 20.20.2. See "Quick start" in the README for getting a supported Node.',
  );
  t.type(unsupportedNode('18.0.0'), 'string');
  t.type(unsupportedNode('22.18.1'), 'string', 'line 22 before 22.19: the delivery client needs it');
});
