// Apache Commons CSV, the library Kura's web UI reads and writes asset channel CSV with
// (CSVFormat.RFC4180 in its AssetConfigValidator and GwtDriverAndAssetServiceImpl), as a peer for
// test/assets/channels-csv-peer.test.ts. Run with Debian's libcommons-csv-java on the class path:
//   java -cp /usr/share/java/commons-csv.jar test/helpers/CommonsCsvPeer.java
// One request per line on stdin, one answer line each on stdout (fields are "." + base64 of their
// UTF-8, "~" is null; fields are joined by "," and records by ";"):
//   parse <base64 of a CSV text>   ->  ok <records>         (CSVParser.parse(text, RFC4180))
//   print <records>                ->  ok <base64 of text>  (CSVPrinter: print each field, println)
//   anything failing               ->  err <base64 of the exception's message>
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVPrinter;
import org.apache.commons.csv.CSVRecord;

public class CommonsCsvPeer {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        Base64.Encoder enc = Base64.getEncoder();
        Base64.Decoder dec = Base64.getDecoder();
        for (String line; (line = in.readLine()) != null;) {
            int sp = line.indexOf(' ');
            String cmd = sp < 0 ? line : line.substring(0, sp);
            String arg = sp < 0 ? "" : line.substring(sp + 1);
            try {
                if (cmd.equals("parse")) {
                    String csv = new String(dec.decode(arg), StandardCharsets.UTF_8);
                    StringBuilder sb = new StringBuilder("ok ");
                    try (CSVParser parser = CSVParser.parse(csv, CSVFormat.RFC4180)) {
                        boolean first = true;
                        for (CSVRecord r : parser) {
                            if (!first) sb.append(';');
                            first = false;
                            for (int i = 0; i < r.size(); i++) {
                                if (i > 0) sb.append(',');
                                sb.append('.').append(enc.encodeToString(r.get(i).getBytes(StandardCharsets.UTF_8)));
                            }
                        }
                    }
                    out.println(sb);
                } else if (cmd.equals("print")) {
                    StringWriter w = new StringWriter();
                    try (CSVPrinter printer = new CSVPrinter(w, CSVFormat.RFC4180)) {
                        for (String rec : arg.split(";", -1)) {
                            for (String f : rec.split(",", -1)) {
                                printer.print(f.equals("~") ? null : new String(dec.decode(f.substring(1)), StandardCharsets.UTF_8));
                            }
                            printer.println();
                        }
                    }
                    out.println("ok " + enc.encodeToString(w.toString().getBytes(StandardCharsets.UTF_8)));
                } else {
                    throw new IllegalArgumentException("unknown request " + cmd);
                }
            } catch (Exception e) {
                out.println("err " + enc.encodeToString(String.valueOf(e.getMessage()).getBytes(StandardCharsets.UTF_8)));
            }
        }
    }
}
