import type { components } from '../generated/openapi.js';
import { byId } from './dom.js';

// The look a lead product gives the portal shown inside its pages: its name, its logo, its accent
// colour. The server's own (PORTAL_*) come in the page's meta tag; a portal link's own come with
// its session (POST /portal-session), and are kept with the session key for a reload. The server
// checks every value; they are checked here again before use, and only ever set as text (the
// name), as an image's address (the logo, which the page's policy lets load from its origin
// alone) or as one CSS property's value (the colour): none can add markup, script or style.

export type Branding = components['schemas']['PortalBranding'];

const DEFAULT_NAME = 'leadhooks';
const HEX_COLOUR = /^#[0-9A-Fa-f]{6}$/;

const text = (value: unknown): string | null => (typeof value === 'string' && value.trim() !== '' ? value : null);

function logoUrl(value: unknown): string | null {
  if (typeof value !== 'string' || !URL.canParse(value)) return null;
  const protocol = new URL(value).protocol;
  return protocol === 'https:' || protocol === 'http:' ? value : null;
}

const colour = (value: unknown): string | null => (typeof value === 'string' && HEX_COLOUR.test(value) ? value : null);

/** Any value as a Branding: each field kept only when it is what it should be. */
export function brandingOf(value: unknown): Branding {
  const fields = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  return { productName: text(fields.productName), logoUrl: logoUrl(fields.logoUrl), accentColor: colour(fields.accentColor) };
}

/** The server's branding, from the page's meta tag; none when it holds none or is not JSON. */
export function serverBranding(): Branding {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="leadhooks-branding"]');
  try {
    return brandingOf(JSON.parse(meta?.content ?? '{}'));
  } catch {
    return brandingOf({});
  }
}

/** Black or white, whichever contrasts more with `hex` (WCAG relative luminance). */
function textOn(hex: string): string {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05) ? '#000' : '#fff';
}

/** Shows the page with `branding`; a field that is null shows the portal's own. */
export function applyBranding(branding: Branding): void {
  const name = branding.productName ?? DEFAULT_NAME;
  byId('brand-name').textContent = name;
  document.title = `${name} · client portal`;
  byId('page-title').textContent = `${name} client portal`; // what a screen reader announces first
  const logo = byId<HTMLImageElement>('brand-logo');
  if (branding.logoUrl === null) {
    logo.hidden = true;
    logo.removeAttribute('src');
  } else {
    logo.src = branding.logoUrl;
    logo.hidden = false;
  }
  // A CSS property set through the object model, which the policy's style-src allows, as it
  // would not allow a style attribute or element; and a value checked as a colour first.
  const root = document.documentElement.style;
  if (branding.accentColor === null) {
    root.removeProperty('--accent');
    root.removeProperty('--on-accent');
  } else {
    root.setProperty('--accent', branding.accentColor);
    root.setProperty('--on-accent', textOn(branding.accentColor));
  }
}
