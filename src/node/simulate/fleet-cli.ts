// `kubeshard node --simulate N [flags]`: N virtual nodes in one process (issue 23). A stub
// until the simulated fleet lands.
export async function fleetMain(argv: string[]): Promise<number> {
  void argv;
  console.error('kubeshard node --simulate: not built yet');
  return 2;
}
