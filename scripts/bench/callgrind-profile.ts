// Reading what callgrind counted: the instructions (Ir) each function executed itself, from a
// callgrind output file, with the addresses of V8's compiled JavaScript named through the perf
// map that `node --perf-basic-prof` writes (/tmp/perf-<pid>.map). Instruction counts do not
// drift with the machine's speed as wall-clock rates do: the same build under the same load
// counts the same to within a few tenths of a percent.

/** One line of a perf map: start address, size, name. */
export interface PerfMapEntry {
  start: number;
  size: number;
  name: string;
}

export function parsePerfMap(text: string): PerfMapEntry[] {
  const entries: PerfMapEntry[] = [];
  for (const line of text.split('\n')) {
    const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/i.exec(line);
    if (match) entries.push({ start: parseInt(match[1]!, 16), size: parseInt(match[2]!, 16), name: match[3]! });
  }
  return entries.sort((a, b) => a.start - b.start);
}

/** The entry whose code holds `address`, if any. */
export function lookupAddress(entries: PerfMapEntry[], address: number): string | undefined {
  let low = 0;
  let high = entries.length - 1;
  let best: PerfMapEntry | undefined;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (entries[middle]!.start <= address) {
      best = entries[middle];
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return best && address < best.start + best.size ? best.name : undefined;
}

/**
 * Self cost (the first event, Ir here) per function name of a callgrind output file (format of
 * callgrind 3.x, names compressed as `fn=(id) name` on first use, or given whole). A cost line
 * holds the positions (`positions:`, one column unless more are named) then the events. The cost
 * line after `calls=` is the callee's inclusive cost and is not the caller's own. A name's
 * recursion suffix (`'2`, from --separate-recs) is dropped: one function, one row.
 */
export function selfCosts(text: string): { total: number; byFunction: Map<string, number> } {
  const names = new Map<string, string>();
  const byFunction = new Map<string, number>();
  let total = 0;
  let positions = 1;
  let current: string | undefined;
  let afterCall = false;
  const nameOf = (id: string | undefined, given: string | undefined): string | undefined => {
    if (id === undefined) return given?.replace(/'\d+$/, '');
    if (given !== undefined) names.set(id, given.replace(/'\d+$/, ''));
    return names.get(id);
  };
  for (const line of text.split('\n')) {
    const named = /^(c?fn)=(?:\((\d+)\))? ?(.*)$/.exec(line);
    if (named) {
      const name = nameOf(named[2], named[3] === '' ? undefined : named[3]);
      if (named[1] === 'fn') {
        current = name;
        afterCall = false;
      }
      continue;
    }
    if (line.startsWith('calls=')) {
      afterCall = true;
      continue;
    }
    const header = /^(positions|totals): (.*)$/.exec(line);
    if (header) {
      if (header[1] === 'positions') positions = header[2]!.trim().split(/\s+/).length;
      else total = Number(header[2]!.trim().split(/\s+/)[0]);
      continue;
    }
    if (!/^[+\-*\d]/.test(line)) continue;
    if (afterCall) {
      afterCall = false;
      continue;
    }
    const cost = Number(line.trim().split(/\s+/)[positions] ?? 0);
    if (current !== undefined && cost > 0) byFunction.set(current, (byFunction.get(current) ?? 0) + cost);
  }
  return { total, byFunction };
}

/** Self costs with compiled JavaScript named from the perf map (`0x…` functions), and paths shortened. */
export function namedCosts(byFunction: Map<string, number>, perfMap: PerfMapEntry[]): Map<string, number> {
  const named = new Map<string, number>();
  for (const [fn, cost] of byFunction) {
    const address = /^0x([0-9a-f]+)$/i.exec(fn);
    let name = address ? (lookupAddress(perfMap, parseInt(address[1]!, 16)) ?? 'compiled code, not in the perf map') : fn;
    name = name
      .replace(/^JS:[*+~^]?'?/, 'JS ')
      .replace(/file:\/\/\S*?\/dist\//, 'dist/')
      .replace(/\S*\/node_modules\//, '')
      .replace(/ \[\S*\]$/, '');
    named.set(name, (named.get(name) ?? 0) + cost);
  }
  return named;
}
