import t from 'tap';
import { newEventId } from '../../src/event-id.js';

// The stores index events by id, and deliveries by their event's id: ids made one after another
// must sort in the order they were made, so that those indexes grow at their end.
t.test('an event id is evt_ and 32 hex digits, the time first, so that later ids sort after earlier ones', async (t) => {
  const time = (id: string) => parseInt(id.slice(4, 16), 16);
  const before = Date.now();
  // Ids made until they span a few milliseconds, however the process is scheduled meanwhile.
  const ids = [newEventId()];
  while (time(ids.at(-1)!) < time(ids[0]!) + 3) ids.push(newEventId());
  const after = Date.now();
  t.same(ids.filter((id) => !/^evt_[0-9a-f]{32}$/.test(id)), [], 'evt_ and 32 hex digits');
  t.same(ids.filter((id) => time(id) < before || time(id) > after), [], 'the first 12 digits are the time in milliseconds');
  t.same(ids.filter((id, i) => i > 0 && time(id) > time(ids[i - 1]!) && id <= ids[i - 1]!), [], 'one made a millisecond later sorts after');
  t.equal(new Set(ids).size, ids.length, 'no two alike');
});
