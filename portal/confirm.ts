import { byId } from './dom.js';

/**
 * Asks before an action that cannot be undone, in the page's one modal <dialog>: the browser
 * keeps the focus inside it and closes it on Escape. Cancel has the focus first. Resolves true
 * when the action is confirmed; the focus goes back to where it was.
 */
export function confirmAction(question: string, confirmText: string): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>('confirm');
  const back = document.activeElement;
  byId('confirm-question').textContent = question;
  byId('confirm-yes').textContent = confirmText;
  dialog.returnValue = '';
  dialog.showModal();
  byId('confirm-no').focus();
  return new Promise((resolve) => {
    dialog.addEventListener(
      'close',
      () => {
        if (back instanceof HTMLElement && back.isConnected) back.focus();
        resolve(dialog.returnValue === 'yes');
      },
      { once: true },
    );
  });
}

/** Wires the dialog's two buttons, once. */
export function setUpConfirm(): void {
  const dialog = byId<HTMLDialogElement>('confirm');
  byId('confirm-yes').addEventListener('click', () => dialog.close('yes'));
  byId('confirm-no').addEventListener('click', () => dialog.close('no'));
}
