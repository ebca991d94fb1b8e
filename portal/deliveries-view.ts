import { api, call, type Attempt, type Webhook } from './api.js';
import { deliveryChart } from './chart.js';
import { button, byId, h, replaceContent, time } from './dom.js';
import { say } from './messages.js';

// One webhook's delivery log (GET /webhook/{hookID}/deliveries), newest first, with its chart,
// each failed attempt's status code and error, and a replay button for each failed delivery.

const PAGE = 50;

interface Log {
  hookId: number;
  attempts: Attempt[];
  next: number | null;
}

let log: Log | null = null;
let drawn = '';

export const openHookId = (): number | null => log?.hookId ?? null;

export async function openDeliveries(hook: Webhook, onError: (error: unknown) => void): Promise<void> {
  log = { hookId: hook.hookId, attempts: [], next: null };
  drawn = '';
  byId('deliveries-title').textContent = `Deliveries to webhook ${hook.hookId}`;
  byId('deliveries-url').textContent = hook.url;
  byId('deliveries').hidden = false;
  replaceContent(byId('deliveries-body'), h('p', {}, 'Loading…'));
  byId('deliveries-title').focus();
  await refreshDeliveries(onError);
}

export function closeDeliveries(): void {
  log = null;
  drawn = '';
  byId('deliveries').hidden = true;
  replaceContent(byId('deliveries-body'));
}

/** Reads the newest page again; attempts loaded from older pages are kept below it. */
export async function refreshDeliveries(onError: (error: unknown) => void): Promise<void> {
  const current = log;
  if (!current) return;
  try {
    const page = await call(
      api.GET('/webhook/{hookID}/deliveries', { params: { path: { hookID: current.hookId }, query: { limit: PAGE } } }),
    );
    if (log !== current) return; // closed or switched while the page was on its way
    const lowest = page.attempts.at(-1)?.attemptId ?? Infinity;
    const older = current.attempts.filter((a) => a.attemptId < lowest);
    current.attempts = [...page.attempts, ...older];
    if (older.length === 0) current.next = page.next;
    draw(onError);
  } catch (error) {
    onError(error);
  }
}

async function loadOlder(onError: (error: unknown) => void): Promise<void> {
  const current = log;
  if (!current || current.next === null) return;
  try {
    const page = await call(
      api.GET('/webhook/{hookID}/deliveries', {
        params: { path: { hookID: current.hookId }, query: { limit: PAGE, before: current.next } },
      }),
    );
    if (log !== current) return;
    current.attempts.push(...page.attempts);
    current.next = page.next;
    draw(onError);
  } catch (error) {
    onError(error);
  }
}

async function replay(hookId: number, deliveryId: number, onError: (error: unknown) => void): Promise<void> {
  try {
    const queued = await call(
      api.POST('/webhook/{hookID}/deliveries/{deliveryId}/retry', { params: { path: { hookID: hookId, deliveryId } } }),
    );
    say(`Delivery ${queued.deliveryId} (event ${queued.eventId}) is queued again; its new attempt appears in the log.`);
    await refreshDeliveries(onError);
  } catch (error) {
    onError(error);
  }
}

function response(attempt: Attempt): HTMLElement {
  const code = attempt.statusCode === null ? 'no response' : `HTTP ${attempt.statusCode}`;
  return h('td', {}, code, attempt.error === null ? null : h('span', { class: 'attempt-error' }, attempt.error));
}

function row(attempt: Attempt, replayable: boolean, onError: (error: unknown) => void): HTMLTableRowElement {
  const hookId = log!.hookId;
  return h(
    'tr',
    { class: `outcome-${attempt.outcome}` },
    h('td', {}, time(attempt.attemptedAt)),
    h('td', {}, attempt.type, h('span', { class: 'event-id' }, attempt.eventId)),
    h('td', {}, h('span', { class: `badge outcome outcome-${attempt.outcome}` }, attempt.outcome), attempt.replay ? ' ' : null, attempt.replay ? h('span', { class: 'badge' }, 'replay') : null),
    response(attempt),
    h('td', { class: 'number' }, `${attempt.durationMs} ms`),
    h(
      'td',
      {},
      replayable
        ? button('Replay', () => void replay(hookId, attempt.deliveryId, onError), { 'data-focus': `replay-${attempt.deliveryId}` }, `delivery ${attempt.deliveryId}`)
        : null,
    ),
  );
}

function draw(onError: (error: unknown) => void): void {
  const current = log!;
  const state = JSON.stringify([current.attempts, current.next]);
  if (state === drawn) return; // nothing new: the keyboard user's place and the screen stay as they are
  drawn = state;
  // A delivery can be replayed once it failed for good: its newest attempt (first in the list) says so.
  const seen = new Set<number>();
  const rows = current.attempts.map((attempt) => {
    const newest = !seen.has(attempt.deliveryId);
    seen.add(attempt.deliveryId);
    return row(attempt, newest && attempt.outcome === 'failed', onError);
  });
  replaceContent(
    byId('deliveries-body'),
    deliveryChart(current.attempts),
    current.attempts.length === 0
      ? null
      : h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            {},
            h('caption', { class: 'visually-hidden' }, `Delivery attempts to webhook ${current.hookId}, newest first`),
            h('thead', {}, h('tr', {}, ...['When', 'Event', 'Outcome', 'Response', 'Duration', 'Action'].map((name) => h('th', { scope: 'col' }, name)))),
            h('tbody', {}, ...rows),
          ),
        ),
    current.next === null ? null : button('Load older attempts', () => void loadOlder(onError), { 'data-focus': 'older' }),
  );
}
