import { byId } from './dom.js';

// A signing secret is in the API's answer once (a creation, a rotation). The panel shows it
// until the client says it is stored, then forgets it: it is kept nowhere else in the page.

export function showSecret(title: string, secret: string, note: string): void {
  byId('secret-title').textContent = title;
  byId('secret-note').textContent = note;
  const value = byId<HTMLInputElement>('secret-value');
  value.value = secret;
  byId('secret-panel').hidden = false;
  value.focus();
  value.select();
}

export function hideSecret(): void {
  byId<HTMLInputElement>('secret-value').value = '';
  byId('secret-panel').hidden = true;
}

export function setUpSecretPanel(afterDone: () => void): void {
  byId('secret-done').addEventListener('click', () => {
    hideSecret();
    afterDone();
  });
}
