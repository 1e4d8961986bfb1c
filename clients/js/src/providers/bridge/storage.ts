// Where the site's grant token is kept: localStorage by default (the protocol's key
// leuria:token:<engine URL>, per origin by the browser's own rules), in memory where storage is
// blocked (storage access throws in some sandboxed iframes and privacy modes), or an object the page
// gives.

/** The part of the Storage interface the bridge uses. */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export type StorageOption = "local" | "memory" | KeyValueStorage;

/** A Storage-like object backed by a Map. */
export function memoryStorage(): KeyValueStorage {
  const map = new Map<string, string>();
  return {
    getItem: (key) => (map.has(key) ? (map.get(key) as string) : null),
    setItem: (key, value) => void map.set(key, String(value)),
    removeItem: (key) => void map.delete(key),
  };
}

export function tokenKey(engineUrl: string): string {
  return `leuria:token:${engineUrl}`;
}

/** The grant token for one engine URL. Falls back to memory for good once storage throws. */
export class TokenStore {
  private store: KeyValueStorage;
  private readonly memory = memoryStorage();
  readonly key: string;

  constructor(option: StorageOption | undefined, engineUrl: string) {
    this.key = tokenKey(engineUrl);
    this.store = this.pick(option ?? "local");
  }

  get(): string | null {
    return this.use((s) => s.getItem(this.key)) || null;
  }

  set(token: string): void {
    this.use((s) => s.setItem(this.key, token));
  }

  forget(): void {
    this.use((s) => s.removeItem(this.key));
    this.memory.removeItem(this.key);
  }

  private pick(option: StorageOption): KeyValueStorage {
    if (option === "memory") return this.memory;
    if (option !== "local") return option;
    try {
      // Reading the property itself throws where storage is blocked (SecurityError).
      const local = (globalThis as { localStorage?: KeyValueStorage }).localStorage;
      return local ?? this.memory;
    } catch {
      return this.memory;
    }
  }

  /** Runs `op` on the store; if the store throws (quota, blocked), moves what it can to memory. */
  private use<T>(op: (s: KeyValueStorage) => T): T {
    try {
      return op(this.store);
    } catch {
      this.store = this.memory;
      return op(this.memory);
    }
  }
}
