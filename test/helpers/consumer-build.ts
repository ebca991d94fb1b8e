import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { CONSUMER_PROGRAM } from './consumer-program.js';

const NODE_MODULES = fileURLToPath(new URL('../../node_modules', import.meta.url));

/** What a consumer's `tsconfig.json` says: strict, Node's ES modules, fetch from the DOM library. */
const CONSUMER_TSCONFIG = {
  strict: true,
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  target: 'ES2022',
  lib: ['ES2023', 'DOM'],
  types: [],
  skipLibCheck: true,
};

/**
 * A project folder outside the repository, as a consumer has: package.json of an ES module
 * package, and node_modules (openapi-fetch and its types) linked from the repository's.
 */
export function consumerRoot(dir: string): string {
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  symlinkSync(NODE_MODULES, join(dir, 'node_modules'), 'dir');
  return dir;
}

/** Types generated from a description (its text or parsed object) the way a consumer does it. */
export async function generateTypes(description: string | OpenAPI3): Promise<string> {
  return astToString(await openapiTS(description, { silent: true }));
}

/** The consumer program beside the given generated types, in a folder of its own under root. */
export function writeConsumer(root: string, name: string, types: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'openapi.ts'), types);
  const program = join(dir, 'consumer.ts');
  writeFileSync(program, CONSUMER_PROGRAM);
  return program;
}

// Parsing lib.dom.d.ts and the libraries' types is most of a check's time; every program here
// uses the same options, so they are parsed once.
const librarySources = new Map<string, ts.SourceFile | undefined>();

export interface CheckedProgram {
  /** Diagnostics of the consumer's files (each with its 1-based line). */
  diagnostics: Array<{ file: string; line: number; message: string }>;
  /** Writes the JavaScript next to the sources. */
  emit(): void;
}

export function typeCheck(file: string): CheckedProgram {
  const { options, errors } = ts.convertCompilerOptionsFromJson(CONSUMER_TSCONFIG, join(file, '..'));
  if (errors.length > 0) throw new Error(ts.flattenDiagnosticMessageText(errors[0]!.messageText, '\n'));
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    if (!fileName.includes('/node_modules/')) return getSourceFile(fileName, languageVersion, onError, shouldCreate);
    if (!librarySources.has(fileName)) librarySources.set(fileName, getSourceFile(fileName, languageVersion, onError, shouldCreate));
    return librarySources.get(fileName);
  };
  const program = ts.createProgram({ rootNames: [file], options, host });
  const diagnostics = ts.getPreEmitDiagnostics(program).map((diagnostic) => ({
    file: diagnostic.file?.fileName ?? '(options)',
    line: diagnostic.file && diagnostic.start !== undefined ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1 : 0,
    message: ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'),
  }));
  return {
    diagnostics,
    emit() {
      const result = program.emit();
      if (result.emitSkipped) throw new Error('the consumer program was not emitted');
    },
  };
}
