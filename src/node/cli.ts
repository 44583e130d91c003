// `kubeshard node [flags]`: the node agent (issue 23). Owned by the agent's module; a stub
// until it lands.
export async function nodeMain(argv: string[]): Promise<number> {
  void argv;
  console.error('kubeshard node: not built yet');
  return 2;
}
