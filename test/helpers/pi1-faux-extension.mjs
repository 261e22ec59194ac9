// A pi 1.x extension that registers the priced faux provider (test/helpers/pi1-faux.mjs), so the
// real `pi` CLI runs offline: `pi -e <this> --provider pi1-faux --model faux-1 --mode json …`.
// pi loads it on its own Node 22 and resolves @earendil-works/pi-ai itself. The replies come
// from the JSON file named by PI1_FAUX_SCRIPT: {"replies":[…], "tokenSize":{min,max}?,
// "tokensPerSecond":n?}, one reply per model call, in the shape test/helpers/pi1.ts documents.
import * as piAi from "@earendil-works/pi-ai";
import { readFileSync } from "node:fs";
import { pricedFaux, toFauxMessage } from "./pi1-faux.mjs";

export default function (pi) {
  const scriptFile = process.env.PI1_FAUX_SCRIPT;
  const script = scriptFile ? JSON.parse(readFileSync(scriptFile, "utf8")) : { replies: [] };
  const faux = pricedFaux(piAi, { tokenSize: script.tokenSize, tokensPerSecond: script.tokensPerSecond });
  faux.setResponses(script.replies.map((r) => toFauxMessage(piAi, r)));
  pi.registerProvider(faux.provider);
}
