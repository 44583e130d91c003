// kube's remotecommand channel protocols over a WebSocket (apimachinery's httpstream/wsstream
// and util/remotecommand), shared by the node agent's side (src/node/streaming/) and the API
// server's translator to SPDY (src/kubelet/stream-translator.ts): every binary message
// starts with its channel; v5.channel.k8s.io adds CLOSE, the client's end of a channel.
//
// Thread ownership: constants only.

export const PROTOCOL_V5 = 'v5.channel.k8s.io';
export const PROTOCOL_V4 = 'v4.channel.k8s.io';

/** the channels: stdin, stdout, stderr, error (the command's end as a Status), resize ({"Width","Height"}), close (v5: 255 then the channel) */
export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
export const ERROR = 3;
export const RESIZE = 4;
export const CLOSE = 255;
