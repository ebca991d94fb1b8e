import { byId } from './dom.js';

// Two live regions: what went well is announced politely, what went wrong at once (role=alert).
// Each new message replaces the previous ones.

export function say(text: string): void {
  byId('alert').textContent = '';
  byId('status').textContent = text;
}

export function warn(text: string): void {
  byId('status').textContent = '';
  byId('alert').textContent = text;
}

export function clearMessages(): void {
  byId('status').textContent = '';
  byId('alert').textContent = '';
}
