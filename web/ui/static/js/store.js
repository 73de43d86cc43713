// Store keeps conversations in the browser: IndexedDB (attachments make
// them too big for localStorage), or localStorage when IndexedDB is not
// available (some private windows). Small preferences go to localStorage.

const DB = 'hearth-chat';
const STORE = 'conversations';

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

class IDBStore {
  constructor(db) {
    this.db = db;
  }

  tx(mode) {
    return this.db.transaction(STORE, mode).objectStore(STORE);
  }

  async list() {
    const all = await request(this.tx('readonly').getAll());
    return all.sort((a, b) => b.updated - a.updated);
  }

  get(id) {
    return request(this.tx('readonly').get(id));
  }

  put(conv) {
    return request(this.tx('readwrite').put(conv));
  }

  delete(id) {
    return request(this.tx('readwrite').delete(id));
  }
}

class LocalStore {
  key(id) {
    return `${DB}:conv:${id}`;
  }

  async list() {
    const out = [];
    for (let k = 0; k < localStorage.length; k++) {
      const key = localStorage.key(k);
      if (key.startsWith(`${DB}:conv:`)) {
        try {
          out.push(JSON.parse(localStorage.getItem(key)));
        } catch {
          // A damaged entry is skipped, not fatal.
        }
      }
    }
    return out.sort((a, b) => b.updated - a.updated);
  }

  async get(id) {
    const v = localStorage.getItem(this.key(id));
    return v ? JSON.parse(v) : undefined;
  }

  async put(conv) {
    localStorage.setItem(this.key(conv.id), JSON.stringify(conv));
  }

  async delete(id) {
    localStorage.removeItem(this.key(id));
  }
}

/** open returns the conversation store. */
export async function open() {
  try {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: 'id' });
    return new IDBStore(await request(req));
  } catch {
    return new LocalStore();
  }
}

/** pref reads a preference. */
export function pref(name, fallback = '') {
  try {
    const v = localStorage.getItem(`${DB}:${name}`);
    return v === null ? fallback : v;
  } catch {
    return fallback;
  }
}

/** setPref writes a preference. */
export function setPref(name, value) {
  try {
    localStorage.setItem(`${DB}:${name}`, String(value));
  } catch {
    // Storage is full or disabled; preferences are a convenience.
  }
}

/** newID returns a random id for a conversation or message. */
export function newID() {
  return crypto.randomUUID ? crypto.randomUUID() : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}
