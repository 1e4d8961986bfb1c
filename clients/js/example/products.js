// The shop's catalog, and the search the AI can run through the search_products tool. The
// tool's arguments come from the AI: they are checked against its inputSchema before execute
// runs, and execute still treats them as untrusted input (it only reads the catalog).

export const PRODUCTS = [
  { id: 'ember', name: 'Ember mug', color: 'rust red', glaze: 'satin', capacityMl: 350, price: 28, stock: 12, blurb: 'A warm red glaze over speckled stoneware.' },
  { id: 'tide', name: 'Tide mug', color: 'deep blue', glaze: 'glossy', capacityMl: 400, price: 32, stock: 4, blurb: 'Ocean blue that pools darker at the rim.' },
  { id: 'moss', name: 'Moss mug', color: 'green', glaze: 'matte', capacityMl: 300, price: 24, stock: 0, blurb: 'Soft green, matte outside, glossy inside.' },
  { id: 'dune', name: 'Dune tumbler', color: 'sand', glaze: 'matte', capacityMl: 250, price: 19, stock: 20, blurb: 'A handle-less cup for espresso or tea.' },
  { id: 'nimbus', name: 'Nimbus mug', color: 'white', glaze: 'glossy', capacityMl: 450, price: 30, stock: 7, blurb: 'Cloud white, big enough for a long morning.' },
  { id: 'ink', name: 'Ink mug', color: 'black', glaze: 'satin', capacityMl: 350, price: 29, stock: 3, blurb: 'Near-black with a blue sheen in the light.' },
  { id: 'sprout', name: 'Sprout kids cup', color: 'light green', glaze: 'glossy', capacityMl: 200, price: 16, stock: 15, blurb: 'Small, sturdy, and dishwasher safe.' },
  { id: 'harbor', name: 'Harbor travel mug', color: 'blue grey', glaze: 'satin', capacityMl: 420, price: 38, stock: 5, blurb: 'With a cork lid, for the walk to work.' },
];

const words = (text) => text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 1);

/** Products matching any word of the query (in name, color, glaze or blurb), at most maxPrice. */
export function searchProducts({ query, maxPrice }) {
  const wanted = words(String(query ?? '')).filter((w) => !['mug', 'mugs', 'cup', 'cups', 'the', 'and', 'any', 'for'].includes(w));
  return PRODUCTS.filter((p) => {
    if (typeof maxPrice === 'number' && p.price > maxPrice) return false;
    if (!wanted.length) return true;
    const haystack = words(`${p.name} ${p.color} ${p.glaze} ${p.blurb}`);
    return wanted.some((w) => haystack.some((h) => h.startsWith(w)));
  }).map((p) => ({ name: p.name, price: p.price, stock: p.stock, color: p.color, capacityMl: p.capacityMl }));
}

/** The tool the AI sees. */
export const searchTool = {
  name: 'search_products',
  description: 'Search the Kiln & Co. catalog of mugs. Returns matching products with name, price (USD), stock, color and capacity. Use an empty query to list everything.',
  inputSchema: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'Words to look for, e.g. "blue" or "travel".' },
      maxPrice: { type: 'number', minimum: 0, description: 'Only products at or under this price, in USD.' },
    },
    required: ['query'],
    additionalProperties: false,
  },
  execute: (args) => searchProducts(args),
};
