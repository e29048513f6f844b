// The version is injected by the build (esbuild `define`); tests running the sources read package.json.
declare const __GATEWAYD_VERSION__: string | undefined;

export const VERSION: string = typeof __GATEWAYD_VERSION__ === 'string' ? __GATEWAYD_VERSION__ : '0.0.0-dev';
