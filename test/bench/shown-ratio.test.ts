import t from 'tap';
import { shownRatio } from '../../scripts/bench/report.js';

// The tables show a ratio with two decimals unless two would put it on the other side of its
// target, as 0.4959 against ≥ 0.5 would read 0.50 beside "no".

t.test('two decimals when they fall on the same side of the target as the ratio', async (t) => {
  const atLeastHalf = (value: number) => value >= 0.5;
  t.equal(shownRatio(0.6712, atLeastHalf), '0.67');
  t.equal(shownRatio(0.4612, atLeastHalf), '0.46');
  t.equal(shownRatio(0.5, atLeastHalf), '0.50');
  t.equal(shownRatio(0.5049, atLeastHalf), '0.50', 'met, and shown as met');
});

t.test('more decimals when two would read as the other side', async (t) => {
  t.equal(shownRatio(0.4959, (value) => value >= 0.5), '0.496');
  t.equal(shownRatio(0.89962, (value) => value >= 0.9), '0.8996', '0.900 would read as met too');
  t.equal(shownRatio(1.1042, (value) => value <= 1.1), '1.104', 'a time that must stay under its target');
  t.equal(shownRatio(1.0996, (value) => value <= 1.1), '1.10', 'under it, and 1.10 reads as under it');
  t.equal(shownRatio(27 / 30, (value) => value >= 0.9), '0.90', '27/30 is 0.9 to the last bit, and met');
  t.equal(shownRatio(0.9 - 1e-9, (value) => value >= 0.9), '0.899999999', 'a hair under: as many decimals as it takes');
});
