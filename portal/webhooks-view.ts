import { EVENT_NAMES, WEBHOOK_EVENT_NAMES, type WebhookEventName } from '../generated/spec-lists.js';
import { api, call, listWebhooks, type Webhook } from './api.js';
import { confirmAction } from './confirm.js';
import { closeDeliveries, openDeliveries, openHookId } from './deliveries-view.js';
import { button, byId, h, replaceContent, time } from './dom.js';
import { say, warn } from './messages.js';
import { showSecret } from './secret-panel.js';

// The client's webhooks: each with its status, and what can be done to it.

type OnError = (error: unknown) => void;

let drawn = '';
/** Bumped at sign-out: a listing still on its way then is for a session that is over. */
let generation = 0;
/** The webhook whose headers form is open, if any: a redraw keeps it open. */
let editingHeaders: number | undefined;
/** Webhooks whose filter is being edited, with the text typed so far: kept when the list is redrawn. */
const editing = new Map<number, string>();

type Filter = NonNullable<Webhook['filter']>;

const isLeadEvent = (name: WebhookEventName) => (EVENT_NAMES as readonly string[]).includes(name);

/**
 * The text of a filter field as the API takes it: null when empty (every lead), the JSON object
 * typed, or undefined after saying why it is not one. The API checks the rest (operators, paths)
 * and says what is wrong in its own words.
 */
function parseFilter(text: string): Filter | null | undefined {
  if (text.trim() === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    warn(`The filter is not valid JSON (${error instanceof Error ? error.message : String(error)}).`);
    return undefined;
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Filter;
  warn('The filter must be a JSON object, such as {"campaign": "spring"}, or empty for every lead.');
  return undefined;
}

/**
 * A reason the API may give beside a status (why a webhook was disabled, say). openapi.yaml
 * declares none yet: it is shown when present, whichever of these names carries it.
 */
function statusReason(hook: Webhook): string | undefined {
  const fields = hook as unknown as Record<string, unknown>;
  for (const name of ['statusReason', 'disabledReason', 'reason']) {
    const value = fields[name];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/** Any status the API returns, as a badge; the class name keeps to letters. */
function statusBadge(status: string): HTMLElement {
  return h('span', { class: `badge status status-${status.replace(/[^a-z]/gi, '')}` }, h('span', { class: 'visually-hidden' }, 'Status: '), status);
}

async function sendTest(hook: Webhook, onError: OnError): Promise<void> {
  try {
    const result = await call(api.POST('/webhook/{hookID}/test', { params: { path: { hookID: hook.hookId } } }));
    const answer = result.statusCode === null ? `no response (${result.error ?? 'unknown error'})` : `HTTP ${result.statusCode}`;
    const text = `Test event ${result.eventId} to webhook ${hook.hookId}: the receiver answered ${answer} in ${result.durationMs} ms.`;
    if (result.succeeded) say(text);
    else warn(`${text} It did not succeed.`);
  } catch (error) {
    onError(error);
  }
}

async function rotate(hook: Webhook, onError: OnError): Promise<void> {
  const sure = await confirmAction(
    `Rotate the signing secret of webhook ${hook.hookId}? The new secret is shown once; the current one keeps signing deliveries for a grace period.`,
    'Rotate secret',
  );
  if (!sure) return;
  try {
    const rotated = await call(api.POST('/webhook/{hookID}/secret/rotate', { params: { path: { hookID: hook.hookId } } }));
    say(`The secret of webhook ${rotated.hookId} was rotated. The new secret is shown below, once.`);
    const until = new Date(rotated.previousSecretExpiresAt).toLocaleString();
    showSecret(
      `New signing secret of webhook ${rotated.hookId}`,
      rotated.secret,
      `Shown once: store it in your receiver now. Deliveries are signed with the previous secret as well until ${until}.`,
    );
  } catch (error) {
    onError(error);
  }
}

async function setPaused(hook: Webhook, paused: boolean, onError: OnError): Promise<void> {
  try {
    await call(api.PATCH('/webhook/{hookID}', { params: { path: { hookID: hook.hookId } }, body: { paused } }));
    say(paused ? `Webhook ${hook.hookId} is paused: its deliveries wait until it is resumed.` : `Webhook ${hook.hookId} is resumed.`);
    await refreshWebhooks(onError);
  } catch (error) {
    onError(error);
  }
}

function editFilter(hook: Webhook, onError: OnError): void {
  editing.set(hook.hookId, hook.filter ? JSON.stringify(hook.filter, null, 2) : '');
  void refreshWebhooks(onError).then(() => document.getElementById(`filter-${hook.hookId}`)?.focus());
}

function stopEditing(id: number, onError: OnError): void {
  editing.delete(id);
  void refreshWebhooks(onError).then(() => document.querySelector<HTMLElement>(`[data-focus="filter-edit-${id}"]`)?.focus());
}

async function saveFilter(hook: Webhook, text: string, onError: OnError): Promise<void> {
  const filter = parseFilter(text);
  if (filter === undefined) return;
  try {
    await call(api.PATCH('/webhook/{hookID}', { params: { path: { hookID: hook.hookId } }, body: { filter } }));
    say(filter === null ? `Webhook ${hook.hookId} gets every lead again.` : `Webhook ${hook.hookId} now gets only the leads its filter matches.`);
    stopEditing(hook.hookId, onError);
  } catch (error) {
    onError(error);
  }
}

/** The filter of a webhook as a JSON text field, with Save and Cancel. */
function filterEditor(hook: Webhook, onError: OnError): HTMLFormElement {
  const id = hook.hookId;
  const field = h('textarea', { id: `filter-${id}`, rows: 4, spellcheck: 'false', autocomplete: 'off', 'data-focus': `filter-text-${id}` }, editing.get(id) ?? '');
  field.addEventListener('input', () => editing.set(id, field.value));
  const form = h(
    'form',
    { class: 'filter-form', novalidate: true },
    h('label', { for: `filter-${id}` }, `Filter of webhook ${id}, as JSON (empty: every lead)`),
    field,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary', 'data-focus': `filter-save-${id}` }, 'Save filter', h('span', { class: 'visually-hidden' }, ` of webhook ${id}`)),
      button('Cancel', () => stopEditing(id, onError), { 'data-focus': `filter-cancel-${id}` }, `editing the filter of webhook ${id}`),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void saveFilter(hook, field.value, onError);
  });
  return form;
}

async function remove(hook: Webhook, onError: OnError): Promise<void> {
  const sure = await confirmAction(`Delete webhook ${hook.hookId} (${hook.url})? Nothing more is delivered to it. This cannot be undone.`, 'Delete webhook');
  if (!sure) return;
  try {
    await call(api.DELETE('/webhook/{hookID}', { params: { path: { hookID: hook.hookId } } }));
    if (openHookId() === hook.hookId) closeDeliveries();
    say(`Webhook ${hook.hookId} was deleted.`);
    await refreshWebhooks(onError);
    byId('webhooks-title').focus();
  } catch (error) {
    onError(error);
  }
}

/**
 * `Name: value` lines as the API's `headers` (each line split at its first colon, both sides
 * trimmed; blank lines skipped). A line without a colon is named back; the API checks the rest.
 */
function parseHeaderLines(text: string): { headers: Record<string, string> } | { badLine: string } {
  const entries: [string, string][] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return { badLine: line.trim() };
    entries.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  // Made from entries, not by assignment: a name such as `__proto__` stays a name.
  return { headers: Object.fromEntries(entries) };
}

/** The webhook's headers as the API shows them: names, values masked (never whole). */
function headerList(hook: Webhook): string {
  const entries = Object.entries(hook.headers);
  return entries.length === 0 ? 'none' : entries.map(([name, masked]) => `${name}: ${masked}`).join(', ');
}

async function saveHeaders(hook: Webhook, text: string, onError: OnError): Promise<void> {
  const parsed = parseHeaderLines(text);
  if ('badLine' in parsed) return warn(`Write each header as Name: value. This line has no colon: ${parsed.badLine}`);
  try {
    // The whole set is replaced; no lines removes every header.
    await call(api.PATCH('/webhook/{hookID}', { params: { path: { hookID: hook.hookId } }, body: { headers: parsed.headers } }));
    editingHeaders = undefined;
    const count = Object.keys(parsed.headers).length;
    say(count === 0 ? `Webhook ${hook.hookId} sends no custom headers now.` : `Webhook ${hook.hookId} sends ${count} custom header${count === 1 ? '' : 's'} now.`);
    await refreshWebhooks(onError);
  } catch (error) {
    onError(error);
  }
}

/** The form that replaces a webhook's headers: values are secrets, so none is filled in. */
function headersForm(hook: Webhook, onError: OnError): HTMLFormElement {
  const id = hook.hookId;
  const field = h('textarea', {
    id: `headers-${id}`,
    rows: 3,
    spellcheck: 'false',
    autocomplete: 'off',
    placeholder: 'Authorization: Bearer ...',
    'aria-describedby': `headers-hint-${id}`,
    'data-focus': `headers-field-${id}`,
  });
  const form = h(
    'form',
    { class: 'headers-form', novalidate: true },
    h('label', { for: `headers-${id}` }, `Headers of webhook ${id}`),
    h(
      'p',
      { class: 'hint', id: `headers-hint-${id}` },
      'One per line, as Name: value. They replace every header the webhook has, so write again the ones to keep: their values are never shown. No lines removes them all.',
    ),
    field,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary', 'data-focus': `headers-save-${id}` }, 'Save headers'),
      button('Cancel', () => {
        editingHeaders = undefined;
        void refreshWebhooks(onError);
      }),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void saveHeaders(hook, field.value, onError);
  });
  return form;
}

function card(hook: Webhook, onError: OnError): HTMLLIElement {
  const id = hook.hookId;
  const reason = statusReason(hook);
  const open = openHookId() === id;
  return h(
    'li',
    { class: open ? 'hook hook-open' : 'hook' },
    h('h3', {}, `Webhook ${id} `, statusBadge(String(hook.status)), hook.paused ? ' ' : null, hook.paused ? statusBadge('paused') : null),
    h('p', { class: 'hook-url' }, hook.url),
    reason === undefined ? null : h('p', { class: 'hook-reason' }, reason),
    h(
      'dl',
      {},
      h('dt', {}, 'Events'),
      h('dd', {}, hook.events.join(', ')),
      h('dt', {}, 'Added'),
      h('dd', {}, time(hook.created)),
      h('dt', {}, 'Headers'),
      h('dd', { class: 'hook-headers' }, headerList(hook)),
      h('dt', {}, 'Leads'),
      h('dd', {}, hook.filter ? h('code', { class: 'filter' }, JSON.stringify(hook.filter)) : 'every lead'),
    ),
    editing.has(id) ? filterEditor(hook, onError) : null,
    h(
      'div',
      { class: 'actions' },
      button('Deliveries', () => void openDeliveries(hook, onError).then(() => refreshWebhooks(onError)), {
        'data-focus': `deliveries-${id}`,
        'aria-controls': 'deliveries',
        'aria-expanded': String(open),
      }, `of webhook ${id}`),
      button('Send test event', () => void sendTest(hook, onError), { 'data-focus': `test-${id}` }, `to webhook ${id}`),
      button('Rotate secret', () => void rotate(hook, onError), { 'data-focus': `rotate-${id}` }, `of webhook ${id}`),
      button(
        'Set headers',
        () => {
          editingHeaders = id;
          void refreshWebhooks(onError).then(() => document.getElementById(`headers-${id}`)?.focus());
        },
        { 'data-focus': `headers-${id}`, 'aria-expanded': String(editingHeaders === id) },
        `of webhook ${id}`,
      ),
      editing.has(id) ? null : button('Edit filter', () => editFilter(hook, onError), { 'data-focus': `filter-edit-${id}` }, `of webhook ${id}`),
      button(hook.paused ? 'Resume' : 'Pause', () => void setPaused(hook, !hook.paused, onError), { 'data-focus': `pause-${id}` }, `webhook ${id}`),
      button('Delete', () => void remove(hook, onError), { class: 'danger', 'data-focus': `delete-${id}` }, `webhook ${id}`),
    ),
    editingHeaders === id ? headersForm(hook, onError) : null,
  );
}

export async function refreshWebhooks(onError: OnError): Promise<void> {
  const mine = generation;
  try {
    const webhooks = await listWebhooks();
    if (mine !== generation) return;
    const state = JSON.stringify([webhooks, openHookId(), editingHeaders, [...editing.keys()]]);
    if (state === drawn) return;
    drawn = state;
    replaceContent(
      byId('webhook-list'),
      webhooks.length === 0
        ? h('p', { class: 'empty' }, 'No webhooks yet: add one below.')
        : h('ul', { class: 'hooks' }, ...webhooks.map((hook) => card(hook, onError))),
    );
  } catch (error) {
    onError(error);
  }
}

export function clearWebhooks(): void {
  generation++;
  drawn = '';
  editingHeaders = undefined;
  editing.clear();
  replaceContent(byId('webhook-list'));
}

export function setUpCreateForm(onError: OnError): void {
  const form = byId<HTMLFormElement>('create-form');
  // Every event type a webhook can subscribe to, as openapi.yaml's WebhookEventName lists it
  // (generated/spec-lists.ts, the list GET /events/types serves): the lead events, checked at
  // first, and the operational ones, news of the client's other webhooks, for a receiver that
  // wants to hear when one fails.
  const box = (name: WebhookEventName) =>
    h('label', { class: 'check' }, h('input', { type: 'checkbox', value: name, checked: isLeadEvent(name) }), ` ${name}`);
  replaceContent(
    byId('create-events'),
    h('legend', {}, 'Events'),
    h('div', { class: 'event-group', id: 'create-lead-events' }, h('span', { class: 'event-group-name' }, 'Leads: '), ...WEBHOOK_EVENT_NAMES.filter(isLeadEvent).map(box)),
    h(
      'div',
      { class: 'event-group', id: 'create-operational-events' },
      h('span', { class: 'event-group-name' }, 'Your webhooks: '),
      ...WEBHOOK_EVENT_NAMES.filter((name) => !isLeadEvent(name)).map(box),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const url = byId<HTMLInputElement>('create-url').value.trim();
    const events = [...form.querySelectorAll<HTMLInputElement>('#create-events input:checked')].map((checked) => checked.value as WebhookEventName);
    // The API would answer both with `Missing data`; the form can say which.
    if (url === '') return warn('Enter the callback URL of the webhook.');
    if (events.length === 0) return warn('Choose at least one event for the webhook.');
    const filter = parseFilter(byId<HTMLTextAreaElement>('create-filter').value);
    if (filter === undefined) return;
    void (async () => {
      try {
        const created = await call(api.POST('/webhook', { body: { url, events, ...(filter === null ? {} : { filter }) } }));
        form.reset();
        say(`Webhook ${created.hookId} was added. Its signing secret is shown below, once.`);
        await refreshWebhooks(onError);
        showSecret(
          `Signing secret of webhook ${created.hookId}`,
          created.secret,
          'Shown once: store it in your receiver now, to verify the signature of each delivery.',
        );
      } catch (error) {
        onError(error);
      }
    })();
  });
}
