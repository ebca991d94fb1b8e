import { readdirSync, readFileSync } from 'node:fs';

// The fenced blocks of the README and the guides in docs/, for the tests that run what they show.

const DOCS = new URL('../../docs/', import.meta.url);
const FILES = [
  new URL('../../README.md', import.meta.url),
  ...readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .map((name) => new URL(name, DOCS)),
].map((url) => readFileSync(url, 'utf8'));

export interface Block {
  lang: string;
  lines: string[];
  /** The last non-empty line of text before the block. */
  intro: string;
}

/** The lines of one `## ` or `### ` section (of whichever document has it), its subsections included. */
export function sectionLines(title: string): string[] {
  const pattern = new RegExp(`\\n(#{2,3}) ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`);
  const README = FILES.find((text) => pattern.test(text));
  const heading = README === undefined ? null : pattern.exec(README);
  if (!README || !heading) throw new Error(`neither the README nor docs/ has a section "${title}"`);
  // It ends at the next heading of its level or above.
  const next = new RegExp(`\\n#{2,${heading[1]!.length}} `, 'g');
  next.lastIndex = heading.index + 1;
  const end = next.exec(README)?.index;
  return README.slice(heading.index, end).split('\n');
}

/** The fenced blocks of one `## ` or `### ` section (of whichever document has it), its subsections included. */
export function sectionBlocks(title: string): Block[] {
  const lines = sectionLines(title);
  const blocks: Block[] = [];
  let intro = '';
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)$/.exec(lines[i]!);
    if (!fence) {
      if (lines[i]!.trim() !== '') intro = lines[i]!;
      continue;
    }
    const body: string[] = [];
    for (i++; lines[i] !== '```'; i++) body.push(lines[i]!);
    blocks.push({ lang: fence[1]!, lines: body, intro });
  }
  return blocks;
}

export interface Step {
  command: string;
  output: string[];
}

/** `$ ` commands (with `\` continuation lines) and the lines each printed. */
export function consoleSteps(block: Block): Step[] {
  const steps: Step[] = [];
  for (let i = 0; i < block.lines.length; i++) {
    const line = block.lines[i]!;
    if (!line.startsWith('$ ')) {
      steps.at(-1)!.output.push(line);
      continue;
    }
    let command = line.slice(2);
    while (command.endsWith('\\')) command = `${command}\n${block.lines[++i]}`;
    steps.push({ command, output: [] });
  }
  // A blank line separates one command's output from the next command.
  for (const step of steps) while (step.output.at(-1) === '') step.output.pop();
  return steps;
}
