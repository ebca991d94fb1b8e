import t from 'tap';
import { parseOptions, twiceAsLong } from '../../scripts/bench/bench-options.js';

// What the bench's command line asks for: the seconds per measure, a smoke run, and the git ref
// whose build the run compares this one with (--before).

t.test('without --before the run compares nothing with an earlier build', async (t) => {
  const options = parseOptions(['12', '--smoke']);
  t.equal(options.before, undefined);
  t.equal(options.seconds, 12);
  t.equal(options.smoke, true);
  t.equal(options.command, 'npm run bench -- 12 --smoke');
});

t.test('--before takes the ref that follows it, or after an equals sign, anywhere among the others', async (t) => {
  const spaced = parseOptions(['--smoke', '--before', '0d5cded']);
  t.equal(spaced.before, '0d5cded');
  t.equal(spaced.smoke, true);
  t.equal(spaced.command, 'npm run bench -- --smoke --before 0d5cded', 'the command the report names, as typed');
  const joined = parseOptions(['--before=main~3', '10']);
  t.equal(joined.before, 'main~3');
  t.equal(joined.seconds, 10);
  t.equal(joined.smoke, false);
});

t.test('--before without a ref is refused with the usage', async (t) => {
  for (const argv of [['--before'], ['--before='], ['--before', '--smoke'], ['--before', '-3']]) {
    t.throws(() => parseOptions(argv), { message: /^--before wants a git ref \(a commit, a branch, a tag\)\nusage: npm run bench -- \[seconds per measure\] \[--smoke\] \[--before <git ref>\]$/ }, argv.join(' '));
  }
  t.throws(() => parseOptions(['--after', 'x']), { message: /^unknown argument "--after"\nusage: / });
});

t.test('a measure run twice as long takes twice the rounds and seconds, an even number of rounds; a smoke run stays short', async (t) => {
  const full = parseOptions([]);
  t.equal(full.rounds % 2, 0, 'each case goes first in as many rounds as the others (load.ts, inRoundOrder)');
  t.equal(full.leadOrder.rounds % 2, 0);
  t.equal(full.drainRounds % 2, 0);
  const longer = twiceAsLong(full);
  t.equal(longer.rounds, 2 * full.rounds);
  t.equal(longer.seconds, 2 * full.seconds);
  const smoke = parseOptions(['--smoke']);
  t.equal(twiceAsLong(smoke), smoke);
});
