// How the bridge retries a dropped event stream or tool channel: 0.5 s doubling to 8 s, 5 attempts
// (the numbers the protocol gives for @leuria/client).
export const BACKOFF_MS = [500, 1000, 2000, 4000, 8000];

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
