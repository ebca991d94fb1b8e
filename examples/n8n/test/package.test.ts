// The package as n8n's rules for community packages want it, and as n8n loads it: by the files
// the `n8n` section of package.json names, in dist/. Offline: no server needed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ICredentialType, INodeType } from 'n8n-workflow';

const root = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

describe('package.json', () => {
	it('is named and tagged as a community package', () => {
		assert.match(pkg.name, /^n8n-nodes-/);
		assert.ok(pkg.keywords.includes('n8n-community-node-package'));
	});

	it('has no runtime dependency; n8n-workflow is a peer, any version (the n8n that loads it)', () => {
		assert.equal(pkg.dependencies, undefined);
		assert.deepEqual(pkg.peerDependencies, { 'n8n-workflow': '*' });
	});

	it('names built files that n8n loads: the credential and the nodes, with their icons and codex files', () => {
		assert.equal(pkg.n8n.n8nNodesApiVersion, 1);
		const credentials = pkg.n8n.credentials.map((file: string) => Object.values(require(join(root, file)))[0]) as Array<new () => ICredentialType>;
		const nodes = pkg.n8n.nodes.map((file: string) => Object.values(require(join(root, file)))[0]) as Array<new () => INodeType>;
		assert.deepEqual(credentials.map((type) => new type().name), ['leadhooksApi']);
		assert.deepEqual(nodes.map((type) => new type().description.name), ['leadhooks', 'leadhooksTrigger']);
		for (const file of pkg.n8n.nodes as string[]) {
			const node = Object.values(require(join(root, file)))[0] as new () => INodeType;
			const { icon, credentials: used } = new node().description;
			for (const path of Object.values(icon as Record<string, string>)) {
				assert.ok(existsSync(join(root, file, '..', path.replace(/^file:/, ''))), `${file}: ${path}`);
			}
			assert.ok(existsSync(join(root, file.replace(/\.js$/, '.json'))), `${file}: its codex file`);
			assert.deepEqual(used?.map((credential) => credential.name), ['leadhooksApi']);
		}
	});

	it('publishes the built code, icons and codex files, and nothing else (no sources, no tests)', () => {
		const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json'], { cwd: root, encoding: 'utf8' }));
		const files = (packed.files as Array<{ path: string }>).map((file) => file.path).sort();
		assert.ok(files.includes('README.md') && files.includes('package.json'));
		assert.deepEqual(files.filter((file) => !/^dist\/(credentials|icons|nodes)\//.test(file) && !['README.md', 'package.json'].includes(file)), []);
		for (const file of [...pkg.n8n.credentials, ...pkg.n8n.nodes]) assert.ok(files.includes(file), file);
	});
});
