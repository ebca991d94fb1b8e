import { api, ApiError, call } from './api.js';
import { applyBranding, brandingOf, serverBranding } from './branding.js';
import { setUpConfirm } from './confirm.js';
import { closeDeliveries, refreshDeliveries } from './deliveries-view.js';
import { byId } from './dom.js';
import { clearMessages, say, warn } from './messages.js';
import { hideSecret, setUpSecretPanel } from './secret-panel.js';
import { session } from './session.js';
import { clearWebhooks, refreshWebhooks, setUpCreateForm } from './webhooks-view.js';

// The portal: sign in with an API key, or by a portal link made by the lead product (its token in
// the URL's fragment), then the client's webhooks and their delivery logs, kept fresh while the
// tab is visible.

const REFRESH_MS = 3_000;
let timer: ReturnType<typeof setInterval> | undefined;
let refreshing = false;

/** What every failed call says: the API's own words; a key that stopped working signs the tab out. */
function onError(error: unknown): void {
  if (!(error instanceof ApiError)) return warn(`Something went wrong: ${error instanceof Error ? error.message : String(error)}`);
  if (error.status === 401) {
    const fromLink = session.fromLink();
    signOut();
    if (fromLink) return warn('Your portal session has ended. Open the portal again from the app that sent you here.');
    return warn('Your API key is no longer accepted (it may have been revoked). Sign in again with a valid key.');
  }
  if (error.status === 0) return warn(`The service did not answer (${error.message}). Try again in a moment.`);
  warn(error.message);
}

async function refresh(): Promise<void> {
  if (refreshing || document.hidden || session.key() === null) return;
  refreshing = true;
  try {
    await Promise.all([refreshWebhooks(onError), refreshDeliveries(onError)]);
  } finally {
    refreshing = false;
  }
}

/** `604800` → `7 days`: the largest whole unit, as the admin sets it. */
function period(seconds: number): string {
  const [size, unit] = ([[86_400, 'day'], [3_600, 'hour'], [60, 'minute'], [1, 'second']] as const).find(([size]) => seconds % size === 0)!;
  const n = seconds / size;
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** How long the client's history is kept (GET /retention). */
async function showRetention(): Promise<void> {
  const { retention } = await call(api.GET('/retention'));
  byId('retention').textContent = `Delivered and failed events, with their delivery logs, are kept for ${period(retention)}.`;
}

async function showDashboard(accountName: string): Promise<void> {
  byId('account-name').textContent = accountName;
  byId('account').hidden = false;
  byId('sign-in').hidden = true;
  byId('dashboard').hidden = false;
  await Promise.all([refreshWebhooks(onError), showRetention().catch(onError)]);
  timer = setInterval(() => void refresh(), REFRESH_MS);
}

function signOut(): void {
  session.signOut();
  clearInterval(timer);
  hideSecret();
  closeDeliveries();
  clearWebhooks();
  byId('account-name').textContent = '';
  byId('retention').textContent = '';
  byId('account').hidden = true;
  byId('dashboard').hidden = true;
  byId('sign-in').hidden = false;
  byId<HTMLInputElement>('api-key').value = '';
}

/** Sign-out from the button: a portal session is ended on the server too, before the key is forgotten. */
async function signOutByChoice(): Promise<void> {
  const key = session.key();
  if (session.fromLink() && key !== null) {
    await call(api.DELETE('/portal-session', { headers: { 'x-api-key': key } })).catch(() => {
      // Already ended (expired, revoked): there is nothing left to end.
    });
  }
  signOut();
}

/** A portal link's token: exchanged once for a session; taken out of the address bar and the history first. */
async function openLink(token: string): Promise<void> {
  history.replaceState(null, '', location.pathname + location.search);
  try {
    const opened = await call(api.POST('/portal-session', { body: { token } }));
    session.signIn(opened.apiKey, true, opened.branding);
    applyBranding(brandingOf(opened.branding));
    say(`Signed in as ${opened.name}.`);
    await showDashboard(opened.name);
    byId('webhooks-title').focus();
  } catch (error) {
    // 401: the link was used, expired or unknown; 409: its client was made inactive.
    if (error instanceof ApiError && (error.status === 401 || error.status === 409)) {
      warn(`${error.message}. Open the portal again from the app that sent you here, or sign in with an API key.`);
    } else onError(error);
  }
}

async function signIn(apiKey: string): Promise<void> {
  try {
    const about = await call(api.GET('/about', { headers: { 'x-api-key': apiKey } }));
    session.signIn(apiKey);
    byId<HTMLInputElement>('api-key').value = '';
    say(`Signed in as ${about.name}.`);
    await showDashboard(about.name);
    byId('webhooks-title').focus();
  } catch (error) {
    const input = byId<HTMLInputElement>('api-key');
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    input.select();
    if (error instanceof ApiError && error.status === 401) warn('This API key was not accepted. Check it and try again.');
    else onError(error);
  }
}

function start(): void {
  // The link's look while its session lasts (a reload included), else the server's.
  const kept = session.branding();
  applyBranding(kept === null ? serverBranding() : brandingOf(kept));
  setUpConfirm();
  setUpSecretPanel(() => byId('webhooks-title').focus());
  setUpCreateForm(onError);
  byId('deliveries-refresh').addEventListener('click', () => void refreshDeliveries(onError));
  byId('deliveries-close').addEventListener('click', () => {
    closeDeliveries();
    void refreshWebhooks(onError);
    byId('webhooks-title').focus();
  });

  byId('sign-in-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const apiKey = byId<HTMLInputElement>('api-key').value.trim();
    clearMessages();
    if (apiKey === '') return warn('Enter your API key to sign in.');
    void signIn(apiKey);
  });
  byId('api-key').addEventListener('input', () => byId('api-key').removeAttribute('aria-invalid'));
  byId('sign-out').addEventListener('click', () => {
    const fromLink = session.fromLink();
    void signOutByChoice().then(() => {
      say(fromLink ? 'Signed out. The portal session has ended.' : 'Signed out. The API key was removed from this tab.');
      byId('api-key').focus();
    });
  });
  document.addEventListener('visibilitychange', () => void refresh());

  const link = /^#link=(.+)$/.exec(location.hash)?.[1];
  if (link !== undefined) return void openLink(link);
  // A reload keeps the tab signed in: the key is still in its sessionStorage.
  const stored = session.key();
  if (stored === null) return;
  void call(api.GET('/about'))
    .then((about) => showDashboard(about.name))
    .catch(onError);
}

start();
