export const BUNDLE_LIMIT: number;
